import Foundation
@testable import OAuth2
import Testing

/// The header lines libcurl hands the transport, one by one, as libcurl
/// delivers them (split at LF only, CRLF included).
@Suite struct CurlHeaderLineTests {
    private func receive(_ lines: [String]) throws -> CurlTransfer {
        let transfer = try CurlTransfer(request: HTTPTransportRequest(url: URL(string: "http://127.0.0.1:8080/")!), configuration: .init())
        for line in lines {
            let bytes = Array(line.utf8)
            _ = bytes.withUnsafeBytes { transfer.receiveHeaderLine($0) }
        }
        transfer.flushPendingHeader()
        return transfer
    }

    // Found by the header-lines fuzz target (Fuzz/Corpus/header-lines/bare-cr):
    // a bare CR inside a line reached the field value, where whoever passes
    // the value on could see two fields. RFC 9110 §5.5: replace it with SP.
    @Test func bareCarriageReturnInAValueBecomesASpace() throws {
        let transfer = try receive([
            "HTTP/1.1 401 Unauthorized\r\n", "WWW-Authenticate: Bearer error=\"invalid_token\"\rX-Injected: 1\r\n", "\r\n",
        ])
        #expect(transfer.responseHeaders[.wwwAuthenticate] == "Bearer error=\"invalid_token\" X-Injected: 1")
        #expect(transfer.responseHeaders.count == 1)
    }

    // Any line starting `HTTP/` was a status line: among the fields it
    // wiped those before it (a challenge, a length), and as a trailer the
    // whole response, body included.
    @Test func aStatusLineAmongTheFieldsIsAMalformedFieldNotANewResponse() throws {
        let transfer = try receive([
            "HTTP/1.1 401 Unauthorized\r\n", "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n", "HTTP/1.1 200 OK\r\n",
            "Content-Length: 5\r\n", "\r\n",
        ])
        #expect(transfer.responseStatus == 401)
        #expect(transfer.responseHeaders[.wwwAuthenticate] == "Bearer error=\"invalid_token\"")
        #expect(transfer.responseFacts.announcedLength == 5)
        #expect(transfer.responseHeaders.count == 2, "the stray line is no field")
    }

    @Test func aTrailerIsNoFieldAndAStatusLineAsATrailerWipesNothing() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "Transfer-Encoding: chunked\r\n", "\r\n"])
        var body = Array("hello".utf8CString.dropLast())
        #expect(body.withUnsafeMutableBufferPointer { transfer.receiveBody($0.baseAddress, length: $0.count) } == 5)
        for line in ["HTTP/1.1 204 No Content\r\n", "WWW-Authenticate: Bearer error=\"invalid_token\"\r\n", "\r\n"] {
            let bytes = Array(line.utf8)
            #expect(bytes.withUnsafeBytes { transfer.receiveHeaderLine($0) })
        }
        #expect(transfer.responseStatus == 200)
        #expect(transfer.responseBody == Data("hello".utf8))
        #expect(transfer.responseHeaders.map(\.name.rawName) == ["Transfer-Encoding"])
    }

    @Test func aStatusLineAfterAnInterimResponseStartsTheFinalOne() throws {
        let transfer = try receive([
            "HTTP/1.1 100 Continue\r\n", "\r\n", "HTTP/1.1 103 Early Hints\r\n", "Link: </a.css>\r\n", "\r\n",
            "HTTP/1.1 201 Created\r\n", "X-A: 1\r\n", "\r\n",
        ])
        #expect(transfer.responseStatus == 201)
        #expect(transfer.responseHeaders.map(\.name.rawName) == ["X-A"])
    }

    @Test func aLineWithoutAColonOrWithoutANameIsSkippedAndTheNextFieldCounts() throws {
        let transfer = try receive([
            "HTTP/1.1 200 OK\r\n", "no colon here\r\n", ": no name\r\n", "Content-Length: 7\r\n", "\r\n",
        ])
        #expect(transfer.responseFacts.announcedLength == 7)
        #expect(transfer.responseHeaders.map(\.name.rawName) == ["Content-Length"])
    }

    @Test func nulAndCarriageReturnAnywhereInALineBecomeSpaces() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "X-Ends: a\u{0}\r\n", "\u{0}X-Starts: b\r\n", "X-Both: \rc\u{0}d\r\n", "\r\n"])
        // The NUL that began a line is a space now: the line continues the value before it.
        #expect(transfer.responseHeaders[HTTPField.Name("X-Ends")!] == "a X-Starts: b")
        #expect(transfer.responseHeaders[HTTPField.Name("X-Starts")!] == nil)
        #expect(transfer.responseHeaders[HTTPField.Name("X-Both")!] == "c d")
    }

    @Test func nulInAValueBecomesASpace() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "X-Value: a\u{0}b\r\n", "\r\n"])
        #expect(transfer.responseHeaders[HTTPField.Name("X-Value")!] == "a b")
    }

    @Test func bareCarriageReturnInAFoldedLineBecomesASpace() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "X-Folded: first\r\n", "  sec\rond\r\n", "\r\n"])
        #expect(transfer.responseHeaders[HTTPField.Name("X-Folded")!] == "first sec ond")
    }

    // Found by the header-lines fuzz target (Fuzz/Corpus/header-lines/empty-fold):
    // a continuation line of only spaces left a trailing space on the value.
    @Test func emptyContinuationLineAddsNothing() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "X-Folded: a\r\n", "   \r\n", "\r\n"])
        #expect(transfer.responseHeaders[HTTPField.Name("X-Folded")!] == "a")
    }

    // The checks at the end of the headers (body over the limit, a body
    // ended by the connection) read what the fields said
    // as they came, not a search of the fields.
    @Test func theFieldsOfTheFinalResponseAreNotedAsTheyCome() throws {
        let transfer = try receive([
            "HTTP/1.1 103 Early Hints\r\n", "Link: </a.css>\r\n", "Content-Length: 5\r\n", "\r\n",
            "HTTP/1.1 200 OK\r\n", "Transfer-Encoding: gzip, Chunked\r\n", "\r\n",
        ])
        #expect(transfer.responseFacts.announcedLength == nil)
        #expect(transfer.responseFacts.contentLengthCount == 0)
        #expect(transfer.responseFacts.isChunked)
    }

    @Test func oneContentLengthIsAnnouncedAndTwoAreNot() throws {
        let one = try receive(["HTTP/1.1 200 OK\r\n", "content-length: 42\r\n", "Location: /x\r\n", "\r\n"])
        #expect(one.responseFacts.announcedLength == 42)
        #expect(!one.responseFacts.isChunked)
        let two = try receive(["HTTP/1.1 200 OK\r\n", "Content-Length: 42\r\n", "Content-Length: 42\r\n", "\r\n"])
        #expect(two.responseFacts.contentLengthCount == 2)
        #expect(two.responseFacts.announcedLength == nil)
        let text = try receive(["HTTP/1.1 200 OK\r\n", "Content-Length: lots\r\n", "\r\n"])
        #expect(text.responseFacts.contentLengthCount == 1)
        #expect(text.responseFacts.announcedLength == nil)
    }

    // A field keeps its name as sent and is found by any spelling; a name
    // that is not a token is dropped with its continuation lines.
    @Test func aFieldKeepsItsNameAsSentAndABadNameGoesWithItsFoldedLines() throws {
        let transfer = try receive([
            "HTTP/1.1 200 OK\r\n", "Content-Type: text/plain\r\n", "content-type: text/html\r\n", "CONTENT-LENGTH: 5\r\n",
            "ETag: \"x\"\r\n", "X-Custom: 1\r\n", "Bad Name: dropped\r\n", " continued\r\n", "Server: folded\r\n", " again\r\n", "\r\n",
        ])
        #expect(
            transfer.responseHeaders.map(\.name.rawName) == [
                "Content-Type", "content-type", "CONTENT-LENGTH", "ETag", "X-Custom", "Server",
            ])
        #expect(transfer.responseHeaders[values: .contentType] == ["text/plain", "text/html"])
        #expect(transfer.responseHeaders[.contentLength] == "5")
        #expect(transfer.responseFacts.announcedLength == 5)
        #expect(transfer.responseHeaders[HTTPField.Name("etag")!] == "\"x\"")
        #expect(transfer.responseHeaders[HTTPField.Name("x-custom")!] == "1")
        #expect(transfer.responseHeaders[.server] == "folded again")
    }

    // The lines are kept as bytes on the transport's thread and parsed when
    // the fields are read, into what the fields were parsed into before.
    @Test func theFieldsAreParsedWhenReadAndSettingThemReplacesTheLines() throws {
        let transfer = try receive(["HTTP/1.1 200 OK\r\n", "X-A: 1\r\n", "x-b:  two \r\n", "\r\n"])
        var response = HTTPTransportResponse(
            status: .ok, headerLines: transfer.responseHeaderLines, body: Data("{}".utf8), url: nil)
        #expect(response.headers.map(\.name.rawName) == ["X-A", "x-b"])
        #expect(response.headers[HTTPField.Name("x-a")!] == "1")
        #expect(response.headers[HTTPField.Name("X-B")!] == "two")
        #expect(response.head.headerFields == response.headers)
        #expect(response.description == "HTTPTransportResponse(200, HTTPFields(X-A, x-b), 2 bytes)")
        response.headers[HTTPField.Name("X-A")!] = nil
        response.headers[.contentType] = "application/json"
        #expect(response.headers.map(\.name.rawName) == ["x-b", "Content-Type"])
        #expect(ResponseHeaderLines().fields.isEmpty)
    }

    // A field the transfer reads itself is recognised by its name in any
    // case, and only by its exact spelling: no space before the colon.
    @Test func aNoteworthyNameCountsOnlyWhenItIsTheFieldsWholeName() throws {
        let spaced = try receive(["HTTP/1.1 200 OK\r\n", "Content-Length : 42\r\n", "X-Location: /x\r\n", "\r\n"])
        #expect(spaced.responseFacts.contentLengthCount == 0)
        #expect(spaced.responseHeaders.map(\.name.rawName) == ["X-Location"])
        let shouting = try receive(["HTTP/1.1 200 OK\r\n", "TRANSFER-ENCODING: CHUNKED\r\n", "LOCATION: /x\r\n", "\r\n"])
        #expect(shouting.responseFacts.isChunked)
    }

    // A folded value is noted whole, as the field a reader gets.
    @Test func aFoldedContentLengthIsNotedAsItsWholeValue() throws {
        let onNextLine = try receive(["HTTP/1.1 200 OK\r\n", "Content-Length:\r\n", "  12\r\n", "\r\n"])
        #expect(onNextLine.responseFacts.announcedLength == 12)
        #expect(onNextLine.responseHeaders[.contentLength] == "12")
        let split = try receive(["HTTP/1.1 200 OK\r\n", "Content-Length: 1\r\n", " 2\r\n", "\r\n"])
        #expect(split.responseFacts.contentLengthCount == 1)
        #expect(split.responseFacts.announcedLength == nil)
        #expect(split.responseHeaders[.contentLength] == "1 2")
        let chunkedLater = try receive(["HTTP/1.1 200 OK\r\n", "Transfer-Encoding: gzip,\r\n", "\tchunked\r\n", "\r\n"])
        #expect(chunkedLater.responseFacts.isChunked)
    }
}
