@testable import ConfigurationFiles
import FCM
import Foundation
import PushCore
@testable import PushEvents
@testable import PushWorker
import Testing
@testable import Connector

/// A configuration is refused where it is read, with a `ConfigurationError` naming the file and
/// the field (the pipeline knows no command-line error type); the command line exits 2 with it.
@Suite(.timeLimit(.minutes(1))) struct ConfigurationErrorTests {
    @Test func aMissingOrMalformedAppIDFileIsAConfigurationErrorNamingTheFile() throws {
        let dir = try temporaryDirectory()
        #expect(throws: ConfigurationError.self) { try AppConfigurationFile.load("\(dir)/none.json") }
        do {
            _ = try AppConfigurationFile.load("\(dir)/none.json")
        } catch {
            #expect(error.description == "\(dir)/none.json: App ID configuration file does not exist")
        }
        let bad = "\(dir)/apps.json"
        try #"{"schema_version":1,"apps":{}}"#.write(toFile: bad, atomically: true, encoding: .utf8)
        do {
            _ = try AppConfigurationFile.load(bad)
            Issue.record("a malformed App ID file was accepted")
        } catch {
            #expect(error.description.hasPrefix("\(bad): apps"), "\(error)")
        }
    }

    @Test func anUnreadableCredentialsFileIsRefusedAtStartNamingTheAppAndField() throws {
        let dir = try temporaryDirectory()
        let path = "\(dir)/apps.json"
        try #"{"schema_version":1,"apps":[{"app_id":"a1","project_id":"shop-prod","credentials_file":"missing.json"}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let registry = try AppConfigurationFile.load(path)
        do {
            _ = try FCMPushSender(client: FCMClient(), registry: registry)
            Issue.record("a missing credentials file was accepted")
        } catch {
            #expect(error.description.hasPrefix("app a1: credentials_file:"), "\(error)")
        }
    }

    @Test func badEventKeysAreAConfigurationErrorThatNeverPrintsAKey() throws {
        let dir = try temporaryDirectory()
        let path = "\(dir)/keys.json"
        try #"{"keys":{"a1":"short-secret"}}"#.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try EventKeys.load(path)
            Issue.record("a key shorter than 16 bytes was accepted")
        } catch {
            #expect(error.description == "\(path): keys.a1 must be a string of at least 16 bytes")
            #expect(!error.description.contains("short-secret"))
        }
    }

    @Test func theCommandLineReportsAConfigurationErrorInItsOwnWordsAndExits2() async throws {
        let dir = try temporaryDirectory()
        let keys = "\(dir)/keys.json"
        try "[]".write(toFile: keys, atomically: true, encoding: .utf8)
        let (code, _, err) = await runCLI(["events", "--http", "127.0.0.1:0", "--db", "\(dir)/events.db", "--event-keys", keys, "--check"])
        #expect(code == 2)
        #expect(err == #"\#(keys): must be a JSON object {"keys": {"<app_id>": "<key>"}}"#)
    }
}
