import Foundation
import Testing

/// `deploy/check_coherence.py`, the cross-file rules of the deployment files (run by
/// deploy/check.sh): the repository holds every rule, and each rule fails on a copy of the
/// repository broken the way issue 31's audit found it (or the way it could break next).
@Suite(.timeLimit(.minutes(2))) struct DeployCoherenceTests {
    @Test func theRepositoryHoldsEveryCrossFileRule() throws {
        let (code, out) = try coherenceCheck(root: repositoryRoot)
        #expect(code == 0 && out.contains("6 of 6 hold"), "\(out)")
    }

    @Test(arguments: [
        Breakage("codes", "deploy/k8s/dlq-replay-job.yaml", #""--code", "RETRIES_EXHAUSTED""#, #""--code", "QUOTA_EXCEEDED""#),
        Breakage("codes", "deploy/prometheus/alerts.yml", "PERMISSION_DENIED|THIRD_PARTY_AUTH_ERROR", "PERMISSION_DENIED|SENDER_ID_MISMATCH"),
        Breakage("metrics", "deploy/prometheus/alerts.yml", "push_connector_lanes_connected <", "push_connector_lane_connected <"),
        Breakage("alerted", "deploy/prometheus/alerts.yml", "increase(push_connector_events_store_failures_total",
                 "increase(push_connector_events_transactions_total"),
        Breakage("vhost", "deploy/k8s/events.yaml", "rabbitmq.messaging.svc:5671/push", "rabbitmq.messaging.svc:5671/%2f"),
        Breakage("vhost", "contracts/asyncapi.yaml", "autoDelete: false, vhost: push}", "autoDelete: false, vhost: /push}"),
        Breakage("keda", "deploy/k8s/worker.yaml", "  maxReplicaCount: 20\n", ""),
        Breakage("keda", "deploy/k8s/worker.yaml", "queueName: push.jobs.high", "queueName: push.jobs.urgent"),
        Breakage("runbooks", "deploy/prometheus/alerts.yml", "operations.md#urgent-jobs", "operations.md#urgent-job"),
    ])
    func aBrokenCopyFailsTheRuleItBreaks(_ breakage: Breakage) throws {
        let copy = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: copy) }
        for item in ["deploy", "docs", "Sources", "contracts", "README.md", "docker-compose.yml"] {
            try FileManager.default.copyItem(atPath: repositoryRoot + "/" + item, toPath: copy + "/" + item)
        }
        let file = copy + "/" + breakage.file
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text.contains(breakage.original), "\(breakage.file) no longer holds what the test breaks")
        try text.replacingOccurrences(of: breakage.original, with: breakage.broken).write(toFile: file, atomically: true, encoding: .utf8)
        let (code, out) = try coherenceCheck(root: copy)
        #expect(code == 1 && out.contains("FAIL [\(breakage.rule)] \(breakage.file)"), "\(out)")
    }

    struct Breakage: Sendable, CustomTestStringConvertible {
        let rule: String, file: String, original: String, broken: String
        init(_ rule: String, _ file: String, _ original: String, _ broken: String) {
            (self.rule, self.file, self.original, self.broken) = (rule, file, original, broken)
        }
        var testDescription: String { "\(rule): \(file)" }
    }

    private func coherenceCheck(root: String) throws -> (Int32, String) {
        try runPython(repositoryRoot + "/deploy/check_coherence.py", [root])
    }
}
