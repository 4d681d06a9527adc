package dev.tandem.device;

/** What a device does with a task (see {@link Device}). */
public enum TaskKind {
    /** Calls the task's kernel on its regions. */
    KERNEL("kernel"),
    /** Copies host bytes into the task's one WRITE region. */
    UPLOAD("tandem.upload"),
    /** Copies the task's one READ region (a step's token) to the host. */
    READBACK("tandem.readback");

    private final String taskName;

    TaskKind(String taskName) {
        this.taskName = taskName;
    }

    /** The name a task of a built-in kind has in traces and errors. */
    public String taskName() {
        return taskName;
    }
}
