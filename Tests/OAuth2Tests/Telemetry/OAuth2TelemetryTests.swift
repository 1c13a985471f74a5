import Foundation
import InMemoryTracing
import MetricsTestKit
@testable import OAuth2
import OAuth2Testing
import Testing
import Tracing

/// Metrics and spans, read back from the test backends swift-metrics and
/// swift-distributed-tracing ship, given to one provider so that tests
/// running at the same time do not mix their counts.
@Suite struct OAuth2TelemetryTests {
    let metrics = TestMetrics()
    let tracer = InMemoryTracer()

    private func harness() throws -> ClientHarness {
        try ClientHarness(telemetry: OAuth2Telemetry(metricsFactory: metrics, tracer: tracer))
    }

    private func count(_ label: String, _ dimensions: [(String, String)]) -> Int64 {
        metrics.counterTotal(label: label, dimensions: dimensions)
    }

    @Test func aRefreshBeforeASignedRequestIsCountedTimedAndTracedAsItsChild() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: -10)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(count("oauth2_token_requests_total", [("grant_type", "refresh_token"), ("outcome", "success")]) == 1)
        #expect(count("oauth2_refreshes_total", [("outcome", "refreshed")]) == 1)
        #expect(try metrics.expectTimer("oauth2_token_request_duration_seconds", [("grant_type", "refresh_token")]).values.count == 1)
        #expect(try metrics.expectTimer("oauth2_lock_wait_seconds").values.count == 1)

        let spans = tracer.finishedSpans
        let signed = try #require(spans.first { $0.operationName == "oauth2.signed_request" })
        let token = try #require(spans.first { $0.operationName == "oauth2.token_request" })
        #expect(token.parentSpanID == signed.spanID)
        #expect(token.traceID == signed.traceID)
        #expect(signed.kind == .client && token.kind == .client)
        #expect(token.attributes["oauth2.grant_type"]?.toSpanAttribute() == .string("refresh_token"))
        #expect(token.attributes["server.address"]?.toSpanAttribute() == .string("idp.example"))
        #expect(token.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(signed.attributes["http.request.method"]?.toSpanAttribute() == .string("GET"))
        #expect(signed.attributes["server.port"]?.toSpanAttribute() == .int64(443))
        #expect(signed.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        #expect(signed.status?.code != .error)

        // The API request carries the signed span's context, as the tracer propagates it.
        let sent = try #require(harness.transport.requests(for: Fixture.apiURL).first)
        #expect(sent.headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] == signed.spanID)
        #expect(sent.headers[HTTPField.Name(InMemoryTracer.traceIDKey)!] == signed.traceID)
    }

    @Test func aRejectedTokenIsRefreshedOnceRetriedAndCounted() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(
            HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""]), for: Fixture.apiURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)

        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        #expect(count("oauth2_unauthorized_retries_total", [("outcome", "accepted")]) == 1)
        #expect(count("oauth2_refreshes_total", [("outcome", "refreshed")]) == 1)
        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        #expect(signed.attributes["oauth2.retried"]?.toSpanAttribute() == .bool(true))
        // The retry carries the span's context too, as the first attempt did, and the new token.
        let sent = harness.transport.requests(for: Fixture.apiURL)
        #expect(sent.count == 2)
        #expect(sent.map { $0.headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] } == [signed.spanID, signed.spanID])
        #expect(sent.last?.headers[.authorization] == "Bearer at-2")
    }

    @Test func aDPoPSignedRequestIsMarkedSoInItsSpanWithoutProofNonceOrKey() async throws {
        let harness = try harness()
        let key = try DPoPKey.generate()
        var token = Fixture.token(access: "at-bound", refresh: nil, expiresAt: harness.clock.now().addingTimeInterval(3600))
        token.tokenType = "DPoP"
        token.dpopKey = key
        token.binding = harness.provider.configuration.binding
        try await harness.store.save(token, account: "alice")
        harness.transport.enqueue(
            HTTPTransportResponse(
                status: 401,
                headers: [.wwwAuthenticate: #"DPoP error="use_dpop_nonce""#, HTTPField.Name("DPoP-Nonce")!: "nonce-value-1"]),
            for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        #expect(signed.attributes["oauth2.dpop"]?.toSpanAttribute() == .bool(true))
        #expect(signed.attributes["oauth2.dpop.algorithm"]?.toSpanAttribute() == .string("ES256"))
        #expect(signed.attributes["oauth2.dpop.nonce_retried"]?.toSpanAttribute() == .bool(true))
        let proof = try #require(harness.transport.requests(for: Fixture.apiURL).last?.headers[HTTPField.Name("DPoP")!])
        let everything = "\(signed.attributes)"
        for secret in [proof, "nonce-value-1", key.thumbprint, "at-bound"] {
            #expect(!everything.contains(secret))
        }
    }

    @Test func aBearerRequestsSpanSaysNothingOfDPoP() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        #expect(signed.attributes["oauth2.dpop"] == nil)
    }

    @Test func everyHopOfARedirectedSignedRequestCarriesTheSpansContext() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: 3600)
        let moved = try #require(URL(string: "https://api.example/v2/me"))
        let elsewhere = try #require(URL(string: "https://cdn.example/me"))
        harness.transport.enqueue(HTTPTransportResponse(status: 302, headers: [.location: moved.absoluteString]), for: Fixture.apiURL)
        harness.transport.enqueue(HTTPTransportResponse(status: 307, headers: [.location: elsewhere.absoluteString]), for: moved)
        harness.transport.enqueue(json: "{}", for: elsewhere)

        let response = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))

        #expect(response.status == 200)
        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        let hops = [Fixture.apiURL, moved, elsewhere].compactMap { harness.transport.requests(for: $0).first }
        #expect(hops.count == 3)
        #expect(hops.map { $0.headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] } == Array(repeating: signed.spanID, count: 3))
        // The token stays on its origin; the trace context is not a secret and goes along.
        #expect(hops.map { $0.headers[.authorization] != nil } == [true, true, false])
    }

    @Test func aSecondRejectionIsCountedAndTheSpanFailsWithTheCodeOnly() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: 3600)
        let rejection = HTTPTransportResponse(status: 401, headers: [.wwwAuthenticate: "Bearer error=\"invalid_token\""])
        harness.transport.enqueue(rejection, for: Fixture.apiURL)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-2", refresh: "rt-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(rejection, for: Fixture.apiURL)

        let error = await oauth2Error { _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL)) }

        #expect(error?.code == .invalidToken)
        #expect(count("oauth2_unauthorized_retries_total", [("outcome", "rejected")]) == 1)
        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        #expect(signed.status?.code == .error)
        #expect(signed.attributes["error.type"]?.toSpanAttribute() == .string("invalid_token"))
    }

    @Test func aRefusedRefreshIsCountedByItsErrorCode() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: -10)
        harness.transport.enqueue(json: "{\"error\":\"invalid_grant\"}", status: 400, for: Fixture.tokenURL)

        let error = await oauth2Error { _ = try await harness.client().token() }

        // The caller hears reauthorization_required; the metrics and span name the provider's answer.
        #expect(error?.code == .reauthorizationRequired)
        #expect(count("oauth2_token_requests_total", [("grant_type", "refresh_token"), ("outcome", "invalid_grant")]) == 1)
        #expect(count("oauth2_refreshes_total", [("outcome", "invalid_grant")]) == 1)
        let span = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.token_request" })
        #expect(span.status?.code == .error)
        #expect(span.attributes["error.type"]?.toSpanAttribute() == .string("invalid_grant"))
        #expect(span.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(400))
    }

    @Test func twentyCallersWaitingOnOneRefreshCountOneRefresh() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: -10)
        let tokenRequests = harness.serveSlowTokenEndpoint(access: "at-2", refresh: "rt-2")
        let client = harness.client()

        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 { group.addTask { _ = try await client.token() } }
            try await group.waitForAll()
        }

        #expect(tokenRequests() == 1)
        #expect(metrics.counterTotal(label: "oauth2_refreshes_total") == 1)
        #expect(metrics.counterTotal(label: "oauth2_token_requests_total") == 1)
    }

    @Test func noLabelDimensionAttributeOrSpanNameCarriesASecretOrAURL() async throws {
        let harness = try harness()
        try await harness.seed(expiresIn: -10)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "at-secret-2", refresh: "rt-secret-2"), for: Fixture.tokenURL)
        harness.transport.enqueue(json: "{}", for: URL(string: "https://api.example/v1/me?api_key=query-secret")!)
        harness.transport.enqueue(json: Fixture.tokenJSON(access: "cc-secret", refresh: nil), for: Fixture.tokenURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: URL(string: "https://api.example/v1/me?api_key=query-secret")!))
        _ = try await harness.client("service").authenticate(.clientCredentials)

        let secrets = [
            Fixture.accessToken, Fixture.refreshToken, Fixture.clientSecret, "at-secret-2", "rt-secret-2", "cc-secret", "query-secret",
            "/v1/me", "alice",
            "service",
        ]
        var texts: [String] = []
        for counter in metrics.counters { texts += [counter.label] + counter.dimensions.flatMap { [$0.0, $0.1] } }
        for timer in metrics.timers { texts += [timer.label] + timer.dimensions.flatMap { [$0.0, $0.1] } }
        for span in tracer.finishedSpans {
            texts.append(span.operationName)
            span.attributes.forEach { key, value in texts += [key, "\(value)"] }
        }
        #expect(texts.count > 10)
        for text in texts {
            for secret in secrets {
                #expect(!text.contains(secret), "\(text)")
            }
        }
    }
}

/// A provider's error codes are its own: a provider answering with a new code
/// each time must not make a new metric series each time.
@Suite struct OAuth2TelemetryOutcomeBoundTests {
    @Test func outcomesBeyondTheFirst64AreOtherErrorAndEarlierOnesKeepTheirName() async throws {
        let metrics = TestMetrics()
        let harness = try ClientHarness(telemetry: OAuth2Telemetry(metricsFactory: metrics))
        for attempt in 0..<70 {
            try await harness.seed(expiresIn: -10)
            harness.transport.enqueue(json: "{\"error\":\"made_up_\(attempt)\"}", status: 400, for: Fixture.tokenURL)
            let error = await oauth2Error { _ = try await harness.client().token() }
            // The caller still hears the provider's own code; only the metric's dimension is bounded.
            #expect(error?.code.rawValue == "made_up_\(attempt)")
        }
        let outcomes = Set(
            metrics.counters.filter { $0.label == "oauth2_token_requests_total" }.compactMap { counter in
                counter.dimensions.first { $0.0 == "outcome" }?.1
            })
        #expect(outcomes.count == 65)
        #expect(outcomes.contains("made_up_0") && outcomes.contains("made_up_63"))
        #expect(!outcomes.contains("made_up_64"))
        let refreshes = "oauth2_refreshes_total"
        let otherTokenRequests = [("grant_type", "refresh_token"), ("outcome", "other_error")]
        #expect(metrics.counterTotal(label: "oauth2_token_requests_total", dimensions: otherTokenRequests) == 6)
        #expect(metrics.counterTotal(label: refreshes, dimensions: [("outcome", "made_up_0")]) == 1)
        #expect(metrics.counterTotal(label: refreshes, dimensions: [("outcome", "other_error")]) == 6)
    }
}

/// The default telemetry reads the process's tracer at each request. With no
/// instrument bootstrapped it starts no span at all (``OAuth2Telemetry/activeTracer``
/// knows `NoOpInstrument` by its type), yet a tracer bound to the task with
/// `withTracer` is found and records the request.
@Suite struct OAuth2TelemetryGlobalTracerTests {
    @Test func aTracerBoundToTheTaskRecordsTheSignedRequestAndNothingOutsideItsScope() async throws {
        let tracer = InMemoryTracer()
        let harness = try ClientHarness(telemetry: .global)
        try await harness.seed(expiresIn: 3600)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)
        harness.transport.enqueue(json: "{}", for: Fixture.apiURL)

        _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        #expect(tracer.finishedSpans.isEmpty)
        #expect(OAuth2Telemetry.global.activeTracer == nil)

        try await withTracer(tracer) {
            #expect(OAuth2Telemetry.global.activeTracer != nil)
            _ = try await harness.client().send(HTTPTransportRequest(url: Fixture.apiURL))
        }
        let signed = try #require(tracer.finishedSpans.first { $0.operationName == "oauth2.signed_request" })
        #expect(signed.attributes["http.response.status_code"]?.toSpanAttribute() == .int64(200))
        let sent = harness.transport.requests(for: Fixture.apiURL)
        #expect(sent.count == 2)
        #expect(sent.first?.headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] == nil)
        #expect(sent.last?.headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] == signed.spanID)
    }
}
