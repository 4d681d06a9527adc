package dev.tandem.server;

/**
 * A request the server answers with an error: the HTTP status and OpenAI's error object
 * {@code {"error":{"message","type","param","code"}}}.
 */
final class ApiException extends RuntimeException {
    private final int status;
    private final String type;
    private final String param;
    private final String code;
    private final boolean retryLater;

    ApiException(int status, String type, String param, String code, String message) {
        this(status, type, param, code, message, status == 429);
    }

    /** @param retryLater whether the answer carries {@code Retry-After} (always for a 429) */
    ApiException(int status, String type, String param, String code, String message, boolean retryLater) {
        super(message);
        this.status = status;
        this.type = type;
        this.param = param;
        this.code = code;
        this.retryLater = retryLater;
    }

    /** 400: a malformed body or a bad parameter, named in {@code param}. */
    static ApiException badParameter(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, "invalid_value", message);
    }

    /** 400: a parameter, or a value of one, that this server does not serve; named in {@code param}. */
    static ApiException unsupported(String param, String message) {
        return new ApiException(400, "invalid_request_error", param, "unsupported_parameter", message);
    }

    int status() {
        return status;
    }

    String type() {
        return type;
    }

    String param() {
        return param;
    }

    String code() {
        return code;
    }

    /** Whether the client should retry after the server's {@code Retry-After}. */
    boolean retryLater() {
        return retryLater;
    }
}
