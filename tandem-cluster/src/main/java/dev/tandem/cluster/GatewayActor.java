package dev.tandem.cluster;

import dev.tandem.cluster.WorkerProtocol.Load;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.pubsub.Topic;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Subscribe;

/**
 * Keeps a gateway's {@link WorkerDirectory} current: the receptionist's listing of workers, their
 * load reports from the topic, and the cluster's reachability and membership events (the
 * failure detector's verdicts, and the removal of downed nodes).
 */
final class GatewayActor {
    private GatewayActor() {}

    private record Listing(Receptionist.Listing listing) {}

    private record Reachability(ClusterEvent.ReachabilityEvent event) {}

    private record Membership(ClusterEvent.MemberEvent event) {}

    static Behavior<Object> create(WorkerDirectory directory) {
        return Behaviors.setup(ctx -> {
            ActorRef<Receptionist.Listing> listings = ctx.messageAdapter(Receptionist.Listing.class, Listing::new);
            ctx.getSystem().receptionist().tell(Receptionist.subscribe(WorkerProtocol.WORKERS, listings));
            ActorRef<Topic.Command<Load>> topic = ctx.spawn(Topic.create(Load.class, WorkerProtocol.LOAD_TOPIC),
                    "load-topic");
            topic.tell(Topic.subscribe(ctx.getSelf().narrow()));
            Cluster cluster = Cluster.get(ctx.getSystem());
            cluster.subscriptions().tell(Subscribe.create(
                    ctx.messageAdapter(ClusterEvent.ReachabilityEvent.class, Reachability::new),
                    ClusterEvent.ReachabilityEvent.class));
            cluster.subscriptions().tell(Subscribe.create(
                    ctx.messageAdapter(ClusterEvent.MemberEvent.class, Membership::new), ClusterEvent.MemberEvent.class));
            return Behaviors.receive(Object.class)
                    .onMessage(Listing.class, l -> {
                        directory.listing(l.listing().getServiceInstances(WorkerProtocol.WORKERS));
                        return Behaviors.same();
                    })
                    .onMessage(Load.class, load -> {
                        directory.load(load);
                        return Behaviors.same();
                    })
                    .onMessage(Reachability.class, r -> {
                        switch (r.event()) {
                            case ClusterEvent.UnreachableMember u -> directory.unreachable(u.member().address());
                            case ClusterEvent.ReachableMember u -> directory.reachable(u.member().address());
                            default -> { }
                        }
                        return Behaviors.same();
                    })
                    .onMessage(Membership.class, m -> {
                        switch (m.event()) {
                            case ClusterEvent.MemberRemoved removed -> directory.removed(removed.member().address());
                            case ClusterEvent.MemberDowned downed -> directory.removed(downed.member().address());
                            default -> { }
                        }
                        return Behaviors.same();
                    })
                    .build();
        });
    }
}
