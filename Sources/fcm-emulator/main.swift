import EmulatorKit
print("fcm-emulator: not wired yet")
