print("oauth2 0.1.0 — usage arrives with the CLI")
