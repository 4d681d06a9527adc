package dev.tandem;

/** An allocation would exceed the device's byte budget. Fails the allocating request only. */
public final class DeviceOutOfMemoryException extends RuntimeException {
    public DeviceOutOfMemoryException(String message) {
        super(message);
    }
}
