package dev.tandem.cluster;

/**
 * A message that crosses nodes. Every one is written by {@link ClusterSerializer} (bound to this
 * interface in the node's configuration), never by Java serialization.
 */
interface ClusterMessage {}
