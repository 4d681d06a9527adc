package dev.tandem.server;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import java.util.List;

/**
 * Cross-origin access for browser applications, off unless origins are configured. A request
 * from an allowed origin gets {@code Access-Control-Allow-Origin} (the origin itself, or
 * {@code *} when any is allowed) and {@code Vary: Origin}; a preflight ({@code OPTIONS} with
 * {@code Access-Control-Request-Method}) from one is answered 204 with the methods and the headers
 * it asked for, before any key is checked (browsers send no credentials on a preflight). A
 * preflight from another origin gets a 403 error object; other requests from it go on without
 * CORS headers, so the browser withholds the answer.
 */
final class Cors implements Filter {
    private static final HeaderName REQUEST_METHOD = HeaderNames.create("Access-Control-Request-Method");
    private static final HeaderName REQUEST_HEADERS = HeaderNames.create("Access-Control-Request-Headers");

    private final List<String> origins;
    private final Replies replies;

    Cors(List<String> origins, Replies replies) {
        this.origins = origins;
        this.replies = replies;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        String origin = req.headers().first(HeaderNames.ORIGIN).orElse(null);
        if (origins.isEmpty() || origin == null) {
            chain.proceed();
            return;
        }
        boolean any = origins.contains("*");
        boolean allowed = any || origins.contains(origin);
        boolean preflight = req.prologue().method() == Method.OPTIONS && req.headers().contains(REQUEST_METHOD);
        if (!allowed) {
            if (preflight) {
                replies.error(req, res, new ApiException(403, "invalid_request_error", null, "origin_not_allowed",
                        "the origin " + origin + " may not call this server"));
                return;
            }
            chain.proceed();
            return;
        }
        res.header(HeaderNames.ACCESS_CONTROL_ALLOW_ORIGIN, any ? "*" : origin);
        res.header(HeaderNames.VARY, "Origin");
        if (preflight) {
            res.header(HeaderNames.ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS");
            res.header(HeaderNames.ACCESS_CONTROL_ALLOW_HEADERS,
                    req.headers().first(REQUEST_HEADERS).orElse("Authorization, Content-Type"));
            res.header(HeaderNames.ACCESS_CONTROL_MAX_AGE, "600");
            res.status(204).send();
            return;
        }
        chain.proceed();
    }
}
