package dev.tandem.session;

import java.util.concurrent.ScheduledExecutorService;

/** What a worker provides to the sessions it hosts. */
public interface RequestHost {

    DeviceParts device();

    /** A fresh request id, unique in the worker. */
    long nextRequestId();

    /** The worker's deadline timer. */
    ScheduledExecutorService timer();

    /** A request was created; the worker tracks it until it finishes. */
    void register(RequestRun request);

    /** A request finished; the worker may admit others now that its memory is free. */
    void finished(RequestRun request);

    /** A session closed and drained. */
    void sessionClosed(SessionImpl<?> session);
}
