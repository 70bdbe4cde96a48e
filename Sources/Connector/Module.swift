/// Namespace marker for the Connector module; see docs/ARCHITECTURE.md.
public enum ConnectorModule {}
