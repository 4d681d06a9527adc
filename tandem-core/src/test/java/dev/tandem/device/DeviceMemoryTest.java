package dev.tandem.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tandem.DeviceOutOfMemoryException;
import org.junit.jupiter.api.Test;

class DeviceMemoryTest {

    @Test
    void theWholeBudgetCanBeReservedAndNotOneByteMore() {
        DeviceMemory memory = new DeviceMemory(100);
        memory.reserve(60, "a");
        memory.reserve(40, "b");
        assertThat(memory.inUse()).isEqualTo(100);
        assertThatThrownBy(() -> memory.reserve(1, "c")).isInstanceOf(DeviceOutOfMemoryException.class)
                .hasMessageContaining("c: allocating 1 bytes").hasMessageContaining("100 of 100 bytes in use");
        assertThat(memory.inUse()).as("a failed reserve takes nothing").isEqualTo(100);
        assertThat(memory.tryReserve(1)).isFalse();
        memory.release(1);
        assertThat(memory.tryReserve(1)).as("exactly the budget again").isTrue();
        assertThat(memory.tryReserve(1)).isFalse();
        assertThat(memory.inUse()).isEqualTo(100);
    }

    @Test
    void overflowingReservationsFailAndReleasingMoreThanReservedIsAnError() {
        DeviceMemory memory = new DeviceMemory(Long.MAX_VALUE);
        memory.reserve(Long.MAX_VALUE - 1, "big");
        assertThatThrownBy(() -> memory.reserve(2, "wraps")).isInstanceOf(DeviceOutOfMemoryException.class);
        assertThat(memory.tryReserve(2)).isFalse();
        assertThat(memory.tryReserve(1)).isTrue();
        assertThat(memory.budget()).isEqualTo(Long.MAX_VALUE);
        DeviceMemory small = new DeviceMemory(1);
        assertThat(small.tryReserve(1)).isTrue();
        assertThatThrownBy(() -> small.release(2)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("released more than it reserved");
        assertThatThrownBy(() -> new DeviceMemory(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be > 0");
        assertThat(new DeviceMemory(1).budget()).isEqualTo(1);
    }
}
