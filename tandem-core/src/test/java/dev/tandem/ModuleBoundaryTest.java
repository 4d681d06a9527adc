package dev.tandem;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The core as a named module, on the module path: the suite itself runs on the class path (see
 * the parent pom's surefire configuration), so this test builds a module layer from the
 * compiled classes and slf4j and runs a request through it. It shows that the descriptor
 * exports {@code dev.tandem} only, that the module's {@code requires} suffice at run time, and
 * that the implementation packages are closed to code outside.
 */
class ModuleBoundaryTest {

    private static Path location(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    private static ModuleLayer layer() throws Exception {
        ModuleFinder finder = ModuleFinder.of(location(Worker.class), location(org.slf4j.LoggerFactory.class));
        Configuration configuration = ModuleLayer.boot().configuration()
                .resolve(finder, ModuleFinder.of(), Set.of("dev.tandem.core"));
        return ModuleLayer.boot().defineModulesWithOneLoader(configuration, ClassLoader.getSystemClassLoader());
    }

    @Test
    void theDescriptorExportsTheApiOnly() throws Exception {
        ModuleDescriptor descriptor = ModuleFinder.of(location(Worker.class)).find("dev.tandem.core")
                .orElseThrow().descriptor();
        assertThat(descriptor.exports()).singleElement().satisfies(export -> {
            assertThat(export.source()).isEqualTo("dev.tandem");
            assertThat(export.isQualified()).isFalse();
        });
        assertThat(descriptor.opens()).isEmpty();
        assertThat(descriptor.requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet()))
                .contains("org.slf4j", "jdk.jfr", "java.base");
        assertThat(descriptor.packages()).contains("dev.tandem.device", "dev.tandem.graph", "dev.tandem.session",
                "dev.tandem.trace");
    }

    @Test
    void aRequestRunsOnTheModulePathAndTheImplementationIsClosed() throws Exception {
        ModuleLayer layer = layer();
        Module core = layer.findModule("dev.tandem.core").orElseThrow();
        assertThat(core.isExported("dev.tandem")).isTrue();
        assertThat(core.isExported("dev.tandem.device")).isFalse();
        assertThat(core.isExported("dev.tandem.session")).isFalse();
        ClassLoader loader = core.getClassLoader();

        Class<?> cpuDevice = loader.loadClass("dev.tandem.CpuDeviceConfig");
        Class<?> workerClass = loader.loadClass("dev.tandem.Worker");
        Class<?> program = loader.loadClass("dev.tandem.Program");
        Class<?> kernel = loader.loadClass("dev.tandem.Kernel");
        Class<?> orchestrator = loader.loadClass("dev.tandem.Orchestrator");
        Class<?> buffer = loader.loadClass("dev.tandem.Buffer");
        Class<?> region = loader.loadClass("dev.tandem.Region");
        Class<?> access = loader.loadClass("dev.tandem.Access");
        Class<?> taskContext = loader.loadClass("dev.tandem.TaskContext");
        Class<?> token = loader.loadClass("dev.tandem.Token");
        Method regionOfTask = taskContext.getMethod("region", int.class);

        // A kernel that writes 42 into its one region, and a program of one step around it.
        Object writeKernel = Proxy.newProxyInstance(loader, new Class<?>[] {kernel}, (proxy, method, args) -> switch (method.getName()) {
            case "name" -> "write-42";
            case "run" -> {
                java.lang.foreign.MemorySegment out = (java.lang.foreign.MemorySegment) regionOfTask.invoke(args[0], 0);
                out.set(java.lang.foreign.ValueLayout.JAVA_INT, 0, 42);
                yield null;
            }
            case "parts" -> 1; // a proxy implements the default methods too
            case "toString" -> "write-42";
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> throw new UnsupportedOperationException(method.toString());
        });
        Object oneStep = Proxy.newProxyInstance(loader, new Class<?>[] {program}, (proxy, method, args) -> {
            if (!method.getName().equals("run")) {
                return method.getName().equals("hashCode") ? System.identityHashCode(proxy) : null;
            }
            Object o = args[0];
            Object out = orchestrator.getMethod("allocate", long.class).invoke(o, 4L);
            Object whole = buffer.getMethod("region").invoke(out);
            Object write = access.getMethod("write", region).invoke(null, whole);
            Object accesses = java.lang.reflect.Array.newInstance(access, 1);
            java.lang.reflect.Array.set(accesses, 0, write);
            orchestrator.getMethod("submit", kernel, accesses.getClass()).invoke(o, writeKernel, accesses);
            orchestrator.getMethod("endStep", region).invoke(o, whole);
            return null;
        });

        Object device = cpuDevice.getMethod("withCores", int.class).invoke(null, 1);
        try (AutoCloseable worker = (AutoCloseable) workerClass.getMethod("create", cpuDevice).invoke(null, device)) {
            Object stream = workerClass.getMethod("run", program, Object.class).invoke(worker, oneStep, null);
            Iterator<?> tokens = ((Iterable<?>) stream).iterator();
            assertThat(tokens.hasNext()).isTrue();
            Object first = tokens.next();
            assertThat((int) token.getMethod("asInt").invoke(first)).isEqualTo(42);
            assertThat(tokens.hasNext()).isFalse();
        }

        // The device package is in the module but closed: its classes load, nothing outside may use them.
        Class<?> cpuCores = loader.loadClass("dev.tandem.device.CpuCores");
        assertThat(cpuCores.getModule()).isSameAs(core);
        assertThatThrownBy(() -> cpuCores.getDeclaredConstructors()[0].setAccessible(true))
                .isInstanceOf(InaccessibleObjectException.class);
        Class<?> deviceInterface = loader.loadClass("dev.tandem.device.Device");
        assertThatThrownBy(() -> java.lang.invoke.MethodHandles.lookup()
                        .findVirtual(deviceInterface, "units", java.lang.invoke.MethodType.methodType(int.class)))
                .isInstanceOf(IllegalAccessException.class);
    }
}
