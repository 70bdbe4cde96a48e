/// Namespace marker for the PushCore module: the pure core (no I/O).
public enum PushCoreModule {}
