import Foundation
import OAuth2
import OAuth2Testing
import Testing

@Suite struct CannedTransportTests {
    let tokenURL = URL(string: "https://idp.example/token")!
    let apiURL = URL(string: "https://api.example/me")!

    @Test func answersQueuedForAnyURLComeOutInOrder() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 200, body: Data("first".utf8)))
        transport.enqueue(HTTPTransportResponse(status: 201, body: Data("second".utf8)))
        let first = try await transport.send(HTTPTransportRequest(url: apiURL))
        let second = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(first.bodyText == "first")
        #expect(second.status == 201)
        #expect(second.bodyText == "second")
    }

    @Test func answerQueuedForAURLOnlyAnswersThatURL() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"access_token":"t"}"#, for: tokenURL)
        transport.enqueue(json: #"{"name":"me"}"#)
        let api = try await transport.send(HTTPTransportRequest(url: apiURL))
        let token = try await transport.send(HTTPTransportRequest(method: .post, url: tokenURL))
        #expect(api.bodyText == #"{"name":"me"}"#)
        #expect(token.bodyText == #"{"access_token":"t"}"#)
    }

    @Test func urlAnswerTakesPrecedenceOverAnyURLAnswer() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "\"any\"")
        transport.enqueue(json: "\"specific\"", for: tokenURL)
        let response = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(response.bodyText == "\"specific\"")
        #expect(transport.pendingCount == 1)
    }

    @Test func urlsMatchWithoutQueryAndFragment() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", for: URL(string: "https://api.example/me?ignored=1")!)
        let request = HTTPTransportRequest(url: URL(string: "https://api.example/me?page=2#top")!)
        let response = try await transport.send(request)
        #expect(response.status == 200)
    }

    @Test func differentPathDoesNotMatch() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", for: tokenURL)
        await #expect(throws: HTTPTransportError.self) {
            try await transport.send(HTTPTransportRequest(url: URL(string: "https://idp.example/token/other")!))
        }
    }

    @Test func jsonAnswerHasJSONContentTypeStatusAndHeaders() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: #"{"error":"invalid_grant"}"#, status: 400, headers: [.cacheControl: "no-store"])
        let response = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(response.status == 400)
        #expect(response.headers[.contentType] == "application/json")
        #expect(response.headers[.cacheControl] == "no-store")
    }

    @Test func jsonAnswerKeepsAGivenContentType() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", headers: [.contentType: "text/plain"])
        let response = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(response.headers[values: .contentType] == ["text/plain"])
    }

    @Test func queuedErrorIsThrown() async throws {
        let transport = CannedTransport()
        transport.enqueue(error: HTTPTransportError.timeout, for: tokenURL)
        await #expect(throws: HTTPTransportError.timeout) {
            try await transport.send(HTTPTransportRequest(url: tokenURL))
        }
    }

    @Test func eachAnswerIsUsedOnce() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}", for: tokenURL)
        _ = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(transport.pendingCount == 0)
        await #expect(throws: HTTPTransportError.self) {
            try await transport.send(HTTPTransportRequest(url: tokenURL))
        }
    }

    @Test func unansweredRequestNamesMethodAndURLWithoutQuery() async throws {
        let transport = CannedTransport()
        let request = HTTPTransportRequest(method: .post, url: URL(string: "https://idp.example/token?code=SECRET")!)
        let error = await #expect(throws: HTTPTransportError.self) {
            try await transport.send(request)
        }
        let message = try #require(error?.message)
        #expect(error == .other(""))
        #expect(message.contains("POST https://idp.example/token"))
        #expect(!message.contains("SECRET"))
    }

    @Test func everyRequestIsRecordedWithMethodURLHeadersAndBody() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}")
        let request = HTTPTransportRequest(
            method: .post,
            url: tokenURL,
            headers: [.authorization: "Basic abc", .contentType: "application/x-www-form-urlencoded"],
            body: Data("grant_type=refresh_token".utf8)
        )
        _ = try await transport.send(request)
        _ = try? await transport.send(HTTPTransportRequest(url: apiURL))
        let recorded = transport.requests
        #expect(recorded.count == 2)
        #expect(recorded[0].method == .post)
        #expect(recorded[0].url == tokenURL)
        #expect(recorded[0].headers[.authorization] == "Basic abc")
        #expect(recorded[0].body == Data("grant_type=refresh_token".utf8))
        #expect(recorded[1].url == apiURL)
        #expect(transport.requests(for: tokenURL).count == 1)
    }

    @Test func handlerAnswersWhatTheQueueDoesNot() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "\"queued\"")
        transport.respond { request in
            HTTPTransportResponse(status: 200, body: Data(request.url.path.utf8))
        }
        let first = try await transport.send(HTTPTransportRequest(url: apiURL))
        let second = try await transport.send(HTTPTransportRequest(url: apiURL))
        let third = try await transport.send(HTTPTransportRequest(url: tokenURL))
        #expect(first.bodyText == "\"queued\"")
        #expect(second.bodyText == "/me")
        #expect(third.bodyText == "/token")
    }

    @Test func handlerServesManyConcurrentCallers() async throws {
        let transport = CannedTransport()
        transport.respond { _ in
            HTTPTransportResponse(status: 200, body: Data(#"{"access_token":"shared"}"#.utf8))
        }
        let bodies = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1000 {
                group.addTask { try await transport.send(HTTPTransportRequest(method: .post, url: tokenURL)).bodyText }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(bodies.count == 1000)
        #expect(Set(bodies) == [#"{"access_token":"shared"}"#])
        #expect(transport.requests.count == 1000)
    }

    @Test func responseURLDefaultsToTheRequestURL() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 200))
        let other = URL(string: "https://elsewhere.example/")!
        transport.enqueue(HTTPTransportResponse(status: 200, url: other))
        let first = try await transport.send(HTTPTransportRequest(url: apiURL))
        let second = try await transport.send(HTTPTransportRequest(url: apiURL))
        #expect(first.url == apiURL)
        #expect(second.url == other)
    }

    @Test func bodyOverTheRequestLimitIsTooLarge() async throws {
        let transport = CannedTransport()
        transport.enqueue(HTTPTransportResponse(status: 200, body: Data(count: 11)))
        await #expect(throws: HTTPTransportError.responseTooLarge) {
            try await transport.send(HTTPTransportRequest(url: apiURL, maxResponseSize: 10))
        }
    }

    @Test func bodyOverTheDefaultLimitIsTooLarge() async throws {
        let transport = CannedTransport(defaultMaxResponseSize: 4)
        transport.enqueue(HTTPTransportResponse(status: 200, body: Data(count: 5)))
        await #expect(throws: HTTPTransportError.responseTooLarge) {
            try await transport.send(HTTPTransportRequest(url: apiURL))
        }
    }

    @Test func nonHTTPURLIsRefused() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}")
        await #expect(throws: HTTPTransportError.unsupportedURL) {
            try await transport.send(HTTPTransportRequest(url: URL(string: "file:///etc/passwd")!))
        }
    }

    @Test func cancelledTaskThrowsCancellationError() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}")
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(HTTPTransportRequest(url: apiURL))
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(transport.pendingCount == 1)
    }

    @Test func resetForgetsAnswersHandlerAndRequests() async throws {
        let transport = CannedTransport()
        transport.enqueue(json: "{}")
        transport.respond { _ in HTTPTransportResponse(status: 204) }
        _ = try await transport.send(HTTPTransportRequest(url: apiURL))
        transport.enqueue(json: "{}")
        transport.reset()
        #expect(transport.requests.isEmpty)
        #expect(transport.pendingCount == 0)
        await #expect(throws: HTTPTransportError.self) {
            try await transport.send(HTTPTransportRequest(url: apiURL))
        }
    }
}
