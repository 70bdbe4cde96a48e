import Synchronization

/// Which node of a cluster a new connection tries first, shared by every connection of the
/// process that uses the same node list.
///
/// A connection tries the preferred node first, then the others in list order. Opening one
/// makes it the preferred node. Losing an open connection (the node stopped, the network
/// broke) moves the preference on to the next node, so that the reconnect, which comes after
/// the caller's backoff, goes elsewhere first instead of knocking on a node that just failed.
/// A single-node list is never rotated.
public enum AMQPNodeRotation {
    private static let preferred = Mutex<[[AMQPSettings.Node]: Int]>([:])

    /// The order in which to try `nodes`: the preferred one, then the rest in list order.
    public static func order(_ nodes: [AMQPSettings.Node]) -> [Int] {
        guard nodes.count > 1 else { return Array(nodes.indices) }
        let start = preferred.withLock { $0[nodes] ?? 0 } % nodes.count
        return (0..<nodes.count).map { (start + $0) % nodes.count }
    }

    /// A connection to `nodes[index]` opened.
    public static func opened(_ index: Int, of nodes: [AMQPSettings.Node]) {
        guard nodes.count > 1 else { return }
        preferred.withLock { $0[nodes] = index }
    }

    /// An open connection to `nodes[index]` was lost: the next connection tries the next node
    /// first (unless another connection has already moved the preference).
    public static func lost(_ index: Int, of nodes: [AMQPSettings.Node]) {
        guard nodes.count > 1 else { return }
        preferred.withLock { table in
            if (table[nodes] ?? 0) % nodes.count == index { table[nodes] = (index + 1) % nodes.count }
        }
    }
}
