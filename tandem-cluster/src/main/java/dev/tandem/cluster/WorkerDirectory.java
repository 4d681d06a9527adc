package dev.tandem.cluster;

import dev.tandem.cluster.WorkerProtocol.Command;
import dev.tandem.cluster.WorkerProtocol.Load;
import dev.tandem.llm.ModelFingerprint;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A gateway's view of the workers: who is registered (the receptionist's listing), what each
 * last reported ({@link Load}), and which nodes the failure detector holds unreachable. Written
 * by the gateway's actor ({@link GatewayActor}, one thread at a time), read by request threads.
 *
 * <p><b>A model is a name and a file.</b> A worker reports the name of its model and the
 * {@link ModelFingerprint} of the file it loaded; two files under one name (two fine-tunes of a
 * base that kept its {@code general.name}, one model quantised two ways) are two models, and
 * a stream is never routed or resumed across them ({@link #eligible(String, String)} asks for
 * both). Requests name models by name alone, so at a gateway a name <em>stands for</em> one
 * file: the gateway's own model's name for good its own file ({@link #WorkerDirectory(String,
 * String) pinned}), any other name the file of the first worker that arrived with it. A worker
 * that arrives with another file under a name that stands for one is <em>refused</em>: it stays a
 * member of the cluster, but this gateway routes nothing to it and says so once, at WARN, naming
 * both fingerprints (rename one of the files' models to serve both). When the last worker of the
 * file a name stands for is gone (left or downed; an unreachable one still holds it, so that a
 * partition never hands a name to another file mid-stream), the name passes to the file of the
 * refused worker that arrived first, logged at INFO: a rolling replacement of a model's file
 * works without a gateway restart, and streams of the old file never resume on the new one.
 *
 * <p>A worker is eligible for a model when it is listed, has reported that model's name and
 * fingerprint, is not draining and its node is reachable; the cluster serves a name while one
 * worker of the file it stands for is eligible ({@link #models()}). Whoever wants to hear of each
 * worker as it is accepted (with its first report, or when its name passes to its file)
 * registers with {@link #onArrival}; it is told from the actor's thread and must not block.
 * Whoever waits for the view to change (a request looking for a worker) takes
 * {@link #changed()}, completed and replaced at every update. Streams whose worker's node is lost
 * register with {@link #onLost}; each is told once per loss, from the actor's thread, and must
 * not block.
 */
final class WorkerDirectory {
    private static final Logger log = LoggerFactory.getLogger(WorkerDirectory.class);

    /** A worker and its last report. */
    record Worker(ActorRef<Command> ref, Load load) {
        Address address() {
            return ref.path().address();
        }

        /** Stable across the cluster: the node's address and the actor's path. */
        long identity() {
            return identity(ref.path().toString());
        }

        /** The routing identity of the worker actor at {@code path} ({@code pekko://tandem@host:port/user/worker}). */
        static long identity(String path) {
            return path.hashCode() * 0x9E3779B97F4A7C15L;
        }
    }

    private final Set<ActorRef<Command>> listed = ConcurrentHashMap.newKeySet();
    private final Map<ActorRef<Command>, Load> loads = new ConcurrentHashMap<>();
    private final Set<Address> unreachable = ConcurrentHashMap.newKeySet();
    /** Workers whose arrival was seen (listed and reporting: the two arrive in either order), in arrival order. */
    private final Map<ActorRef<Command>, Long> announced = new ConcurrentHashMap<>();
    private long arrivals;
    /** Per model name, the fingerprint of the file it stands for here. */
    private final Map<String, String> standsFor = new ConcurrentHashMap<>();
    /** The gateway's own model's name, bound to its file for good; null when none. */
    private final String pinnedName;
    /** Workers announced with another file under a name that stands for one. */
    private final Set<ActorRef<Command>> refused = ConcurrentHashMap.newKeySet();
    private final Set<Consumer<Address>> lostListeners = ConcurrentHashMap.newKeySet();
    private final Set<Consumer<Load>> arrivalListeners = ConcurrentHashMap.newKeySet();
    private volatile CompletableFuture<Void> changed = new CompletableFuture<>();

    /** A directory in which no name is bound in advance. */
    WorkerDirectory() {
        this(null, null);
    }

    /**
     * A directory in which the name {@code ownName} stands for the file of fingerprint
     * {@code ownFingerprint} for good: the gateway's own model, whose text it read from that file.
     */
    WorkerDirectory(String ownName, String ownFingerprint) {
        this.pinnedName = ownName;
        if (ownName != null) {
            standsFor.put(ownName, java.util.Objects.requireNonNull(ownFingerprint, "ownFingerprint"));
        }
    }

    /** The workers that may take a request for the model {@code model} of file {@code fingerprint}. */
    List<Worker> eligible(String model, String fingerprint) {
        List<Worker> out = new ArrayList<>();
        for (Worker w : eligible()) {
            if (w.load().model().equals(model) && w.load().fingerprint().equals(fingerprint)) {
                out.add(w);
            }
        }
        return out;
    }

    /**
     * The models the cluster serves now: each name with an eligible worker of the file it stands
     * for, to the report of one of them (its path and fingerprint).
     */
    Map<String, Load> models() {
        Map<String, Load> out = new java.util.TreeMap<>();
        for (Worker w : eligible()) {
            if (w.load().fingerprint().equals(standsFor.get(w.load().model()))) {
                out.putIfAbsent(w.load().model(), w.load());
            }
        }
        return out;
    }

    /** The fingerprint of the file {@code model} stands for here, or null while no worker brought it. */
    String standsFor(String model) {
        return standsFor.get(model);
    }

    /** The workers that may take a request, whatever its model. */
    private List<Worker> eligible() {
        List<Worker> out = new ArrayList<>();
        for (ActorRef<Command> ref : listed) {
            Load load = loads.get(ref);
            if (load != null && !load.draining() && !unreachable.contains(ref.path().address())) {
                out.add(new Worker(ref, load));
            }
        }
        return out;
    }

    /** Every listed worker that has reported, whatever its state (for stats). */
    List<Load> reports() {
        List<Load> out = new ArrayList<>();
        for (ActorRef<Command> ref : listed) {
            Load load = loads.get(ref);
            if (load != null) {
                out.add(load);
            }
        }
        return out;
    }

    /** Completes at the next change of the view. */
    CompletableFuture<Void> changed() {
        return changed;
    }

    /**
     * Registers a listener of arriving workers: told each one's first report once it is also
     * listed, if its file is the one its model's name stands for; a refused worker is told when
     * the name passes to its file.
     */
    void onArrival(Consumer<Load> listener) {
        arrivalListeners.add(listener);
    }

    /** Registers a listener of lost nodes; returns what unregisters it. */
    Runnable onLost(Consumer<Address> listener) {
        lostListeners.add(listener);
        return () -> lostListeners.remove(listener);
    }

    // ---- updates, from the gateway's actor ----------------------------------------------------

    void listing(Set<ActorRef<Command>> workers) {
        listed.retainAll(workers);
        listed.addAll(workers);
        loads.keySet().retainAll(workers);
        forget(ref -> !workers.contains(ref));
        workers.forEach(this::announce);
        signal();
    }

    void load(Load load) {
        loads.put(load.worker(), load);
        announce(load.worker());
        signal();
    }

    private void announce(ActorRef<Command> worker) {
        Load load = loads.get(worker);
        if (load == null || !listed.contains(worker) || announced.containsKey(worker)) {
            return;
        }
        announced.put(worker, arrivals++);
        standsFor.putIfAbsent(load.model(), load.fingerprint());
        if (load.fingerprint().equals(standsFor.get(load.model()))) {
            log.info("worker {} serves {} ({} slots)", worker.path().address(), load.model(), load.maxActive());
            accepted(load);
        } else {
            refused.add(worker);
            log.warn("worker {} serves '{}' from another file than the one that name stands for here (fingerprint {}"
                    + " from {}, against {}{}): nothing is routed to it while that file is served under the name;"
                    + " give one of the two models another name to serve both", worker.path().address(),
                    load.model(), load.fingerprint(), load.modelPath(), standsFor.get(load.model()),
                    load.model().equals(pinnedName) ? ", the gateway's own --model" : "");
        }
    }

    private void accepted(Load load) {
        for (Consumer<Load> listener : arrivalListeners) {
            listener.accept(load);
        }
    }

    /** Forgets the workers {@code gone} selects, and passes each name whose file has no worker left on. */
    private void forget(java.util.function.Predicate<ActorRef<Command>> gone) {
        announced.keySet().removeIf(gone);
        refused.removeIf(gone);
        for (Map.Entry<String, String> binding : standsFor.entrySet()) {
            String name = binding.getKey();
            if (name.equals(pinnedName) || announcedWith(name, binding.getValue())) {
                continue;
            }
            // The first refused worker's file, or nothing: the next worker's, when it comes.
            ActorRef<Command> next = refused.stream().filter(r -> loads.get(r).model().equals(name))
                    .min(java.util.Comparator.comparingLong(announced::get)).orElse(null);
            if (next == null) {
                standsFor.remove(name);
                continue;
            }
            String fingerprint = loads.get(next).fingerprint();
            standsFor.put(name, fingerprint);
            log.info("model {} stands for the file of fingerprint {} now ({}): the workers of its earlier file {}"
                    + " are gone", name, fingerprint, loads.get(next).modelPath(), binding.getValue());
            for (ActorRef<Command> r : List.copyOf(refused)) {
                Load load = loads.get(r);
                if (load.model().equals(name) && load.fingerprint().equals(fingerprint)) {
                    refused.remove(r);
                    log.info("worker {} serves {} ({} slots)", r.path().address(), name, load.maxActive());
                    accepted(load);
                }
            }
        }
    }

    /** Whether an announced worker reports the model {@code name} of file {@code fingerprint}. */
    private boolean announcedWith(String name, String fingerprint) {
        for (ActorRef<Command> ref : announced.keySet()) {
            Load load = loads.get(ref);
            if (load != null && load.model().equals(name) && load.fingerprint().equals(fingerprint)) {
                return true;
            }
        }
        return false;
    }

    void unreachable(Address address) {
        if (unreachable.add(address)) {
            log.info("node {} is unreachable", address);
            lost(address);
        }
    }

    void reachable(Address address) {
        if (unreachable.remove(address)) {
            log.info("node {} is reachable again", address);
            signal();
        }
    }

    /** The node left or was downed: its workers go, and streams still on it are lost. */
    void removed(Address address) {
        log.info("node {} is out of the cluster", address);
        listed.removeIf(ref -> ref.path().address().equals(address));
        loads.keySet().removeIf(ref -> ref.path().address().equals(address));
        forget(ref -> ref.path().address().equals(address));
        unreachable.remove(address);
        lost(address);
    }

    private void lost(Address address) {
        for (Consumer<Address> listener : lostListeners) {
            listener.accept(address);
        }
        signal();
    }

    private void signal() {
        CompletableFuture<Void> done = changed;
        changed = new CompletableFuture<>();
        done.complete(null);
    }
}
