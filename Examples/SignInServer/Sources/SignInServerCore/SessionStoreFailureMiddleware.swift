import Hummingbird
import Logging

/// Turns a session store's failure (its database unreachable, say) into a
/// 503 page, and logs what failed: a ``SessionStoreError`` says which
/// operation and why, never a session id.
struct SessionStoreFailureMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as SessionStoreError {
            context.logger.error("session store failed", metadata: ["error": "\(error)"])
            return Responses.html(Page.failure("Sessions are unavailable right now; try again in a moment."), status: .serviceUnavailable)
        }
    }
}
