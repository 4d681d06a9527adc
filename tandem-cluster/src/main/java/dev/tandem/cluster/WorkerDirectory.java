package dev.tandem.cluster;

import dev.tandem.cluster.WorkerProtocol.Command;
import dev.tandem.cluster.WorkerProtocol.Load;
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
 * <p>A worker is eligible for a model when it is listed, has reported that model, is not
 * draining and its node is reachable; the cluster serves a model while one worker is eligible
 * for it ({@link #models()}). Whoever wants to hear of each worker as it arrives (with its first
 * report) registers with {@link #onArrival}; it is told from the actor's thread and must not
 * block. Whoever waits for the view to change (a request looking for a worker) takes
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
    /** Workers whose arrival was logged: listed and reporting (the two arrive in either order). */
    private final Set<ActorRef<Command>> announced = ConcurrentHashMap.newKeySet();
    private final Set<Consumer<Address>> lostListeners = ConcurrentHashMap.newKeySet();
    private final Set<Consumer<Load>> arrivalListeners = ConcurrentHashMap.newKeySet();
    private volatile CompletableFuture<Void> changed = new CompletableFuture<>();

    /** The workers that may take a request for {@code model}. */
    List<Worker> eligible(String model) {
        List<Worker> out = new ArrayList<>();
        for (Worker w : eligible()) {
            if (w.load().model().equals(model)) {
                out.add(w);
            }
        }
        return out;
    }

    /** The models the cluster serves now: each model with an eligible worker, to the path one of them loaded it from. */
    Map<String, String> models() {
        Map<String, String> out = new java.util.TreeMap<>();
        for (Worker w : eligible()) {
            out.putIfAbsent(w.load().model(), w.load().modelPath());
        }
        return out;
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

    /** Registers a listener of arriving workers: told each one's first report once it is also listed. */
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
        announced.retainAll(workers);
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
        if (load != null && listed.contains(worker) && announced.add(worker)) {
            log.info("worker {} serves {} ({} slots)", worker.path().address(), load.model(), load.maxActive());
            for (Consumer<Load> listener : arrivalListeners) {
                listener.accept(load);
            }
        }
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
        announced.removeIf(ref -> ref.path().address().equals(address));
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
