/**
 * The {@code tandem} command (picocli). The launcher runs it on the class path; as a module it
 * opens its command classes to picocli, which sets their options by reflection.
 */
module dev.tandem.cli {
    requires dev.tandem.bench;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires java.logging; // to quiet Helidon's java.util.logging output in serve
    requires java.management; // bench first-run and overhead start children with this JVM's flags
    requires java.net.http; // the AOT cache's training run asks a server what clients ask

    opens dev.tandem.cli to info.picocli;
}
