/// Namespace marker for the AMQP module; see docs/ARCHITECTURE.md.
public enum AMQPModule {}
