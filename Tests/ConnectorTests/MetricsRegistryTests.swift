import Foundation
@testable import ServiceRuntime
import Testing
@testable import Connector

/// The metrics registry renders what was counted as Prometheus text that a strict reader and
/// promtool accept, whatever the label values hold.
@Suite struct MetricsRegistryTests {
    @Test func labelValuesWithQuotesBackslashesAndLineFeedsSurviveTheRoundTrip() throws {
        let registry = MetricsRegistry()
        let hostile = "a\"b\\c\nd} e=\"f\",g"
        registry.counter("test_things_total", "things \\ with a\nline feed", labels: ["app_id", "outcome"])
            .labels(hostile, "sent").increment(by: 3)
        let parsed = try PrometheusExposition(registry.render())
        #expect(parsed.value("test_things_total", ["app_id": hostile, "outcome": "sent"]) == 3)
        #expect(parsed.help["test_things_total"] == "things \\ with a\nline feed")
        #expect(parsed.types["test_things_total"] == "counter")
    }

    @Test func histogramBucketsAreCumulativeAndEndWithInfEqualToTheCount() throws {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("test_duration_seconds", "durations", buckets: [0.1, 1]).labels()
        for value in [0.05, 0.1, 0.5, 3, 7] { histogram.observe(value) }
        let parsed = try PrometheusExposition(registry.render())
        #expect(parsed.value("test_duration_seconds_bucket", ["le": "0.1"]) == 2)  // 0.1 counts into le="0.1"
        #expect(parsed.value("test_duration_seconds_bucket", ["le": "1"]) == 3)
        #expect(parsed.value("test_duration_seconds_bucket", ["le": "+Inf"]) == 5)
        #expect(parsed.value("test_duration_seconds_count") == 5)
        #expect(abs((parsed.value("test_duration_seconds_sum") ?? 0) - 10.65) < 1e-9)
    }

    @Test func everyFamilyHasHelpAndTypeAndUnlabelledOnesStartAtZero() throws {
        let registry = MetricsRegistry()
        _ = registry.counter("test_a_total", "a")
        _ = registry.gauge("test_b", "b", labels: ["reason"])
        registry.gauge("test_c", "c", labels: ["reason"]) { [(["quota"], 2), (["auth"], 0)] }
        let text = registry.render()
        let parsed = try PrometheusExposition(text)
        #expect(parsed.types == ["test_a_total": "counter", "test_b": "gauge", "test_c": "gauge"])
        #expect(parsed.value("test_a_total") == 0)
        #expect(!parsed.samples.contains { $0.name == "test_b" }, "no series before a label set is used")
        #expect(parsed.value("test_c", ["reason": "quota"]) == 2)
        let promtool = try promtoolCheckMetrics(text)
        #expect(promtool.status == 0, "\(promtool.output)\n\(text)")
    }

    @Test func concurrentIncrementsAreAllCounted() async throws {
        let registry = MetricsRegistry()
        let family = registry.counter("test_hits_total", "hits", labels: ["app_id"])
        let histogram = registry.histogram("test_h_seconds", "h").labels()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<1000 {
                        family.labels("app-\((task + i) % 3)").increment()
                        histogram.observe(0.001)
                    }
                }
            }
        }
        let parsed = try PrometheusExposition(registry.render())
        let total = parsed.samples.filter { $0.name == "test_hits_total" }.map(\.value).reduce(0, +)
        #expect(total == 8000)
        #expect(parsed.value("test_h_seconds_count") == 8000)
    }

    @Test func theStrictReaderRefusesMalformedText() {
        let bad = [
            "x_total 1\n",  // no TYPE
            "# TYPE x_total counter\nx_total{a=\"1\",} 1\n",  // trailing comma
            "# TYPE x_total counter\nx_total{a=\"\\q\"} 1\n",  // bad escape
            "# TYPE x_total counter\nx_total 1\nx_total 2\n",  // duplicate series
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",  // not cumulative
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",  // no +Inf
            "# TYPE x_total counter\nx_total one\n",
        ]
        for text in bad { #expect(throws: PrometheusExposition.ParseError.self, "\(text)") { try PrometheusExposition(text) } }
    }
}
