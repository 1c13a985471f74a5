import OAuth2
