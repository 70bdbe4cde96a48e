/// Namespace marker for the FCM module; see docs/ARCHITECTURE.md.
public enum FCMModule {}
