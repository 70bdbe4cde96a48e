// fcm-emulator: argument parsing and wiring only; the emulator lives in EmulatorKit.
import CProcessArguments
import EmulatorKit
import Foundation
import Glibc

func fail(_ message: String, status: Int32) -> Never {
    try? FileHandle.standardError.write(contentsOf: Data("fcm-emulator: \(message)\n".utf8))
    exit(status)
}

let command: EmulatorCommand
// argv as glibc gave it (CProcessArguments): CommandLine.arguments is empty under libfaketime.
let arguments = (1..<max(1, Int(process_arguments_count()))).map { process_argument(Int32($0)).map { String(cString: $0) } ?? "" }
do { command = try EmulatorCommandLine.parse(arguments) } catch {
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
