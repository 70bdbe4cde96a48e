// fcm-emulator: argument parsing and wiring only; the emulator lives in EmulatorKit.
import EmulatorKit
import Foundation
import Glibc

func fail(_ message: String, status: Int32) -> Never {
    try? FileHandle.standardError.write(contentsOf: Data("fcm-emulator: \(message)\n".utf8))
    exit(status)
}

let command: EmulatorCommand
do { command = try EmulatorCommandLine.parse(Array(CommandLine.arguments.dropFirst())) } catch {
    fail(error.description, status: 2)
}

switch command {
case .help:
    print(EmulatorCommandLine.usage)
case .makeServiceAccount(let project, let email, let tokenURI, let output):
    do {
        let json = try ServiceAccountFactory.make(projectID: project, clientEmail: email, tokenURI: tokenURI)
        guard FileManager.default.createFile(atPath: output, contents: Data(json.utf8), attributes: [.posixPermissions: 0o600]) else {
            fail("cannot write \(output)", status: 1)
        }
        print("wrote service account for \(email) (project \(project)) to \(output)")
    } catch {
        fail("cannot make a service account: \(error)", status: 1)
    }
case .serve(let configuration):
    signal(SIGPIPE, SIG_IGN)
    var blocked = sigset_t()
    sigemptyset(&blocked)
    sigaddset(&blocked, SIGTERM)
    sigaddset(&blocked, SIGINT)
    pthread_sigmask(SIG_BLOCK, &blocked, nil)  // before the loop thread starts: it inherits the mask
    let emulator: FCMEmulator
    do {
        emulator = try FCMEmulator(configuration: configuration)
        try emulator.start()
    } catch {
        fail("\(error)", status: 1)
    }
    // Written straight to fd 1 (unbuffered): scripts wait for this line.
    let ready = "listening on \(emulator.baseURL)\n" + (configuration.requireAuth ? "" : "auth: off (--no-auth)\n")
    try? FileHandle.standardOutput.write(contentsOf: Data(ready.utf8))
    var received: Int32 = 0
    sigwait(&blocked, &received)
    emulator.stop()
    print("stopped (signal \(received))")
}
