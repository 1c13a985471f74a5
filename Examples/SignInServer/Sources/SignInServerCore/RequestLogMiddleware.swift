import Hummingbird
import Logging

/// Logs each request's method, path and status, and never its query string:
/// the callback's query holds the authorization code.
struct RequestLogMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            context.logger.info("\(request.method) \(request.uri.path) \(response.status.code)")
            return response
        } catch {
            context.logger.info("\(request.method) \(request.uri.path) failed: \(type(of: error))")
            throw error
        }
    }
}
