/// Namespace marker for the EmulatorKit module; see docs/ARCHITECTURE.md.
public enum EmulatorKitModule {}
