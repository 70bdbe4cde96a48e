import Foundation
@testable import ServiceRuntime
import Testing

/// How many processors the process may keep busy: cgroup quota files read as the kernel writes
/// them (pure), and the affinity mask read on this machine.
@Suite struct ProcessorBudgetTests {
    @Test func aCgroupV2QuotaRoundsUpToWholeProcessorsAndMaxIsNoLimit() {
        #expect(ProcessorBudget.quota(cpuMax: "max 100000\n") == nil)
        #expect(ProcessorBudget.quota(cpuMax: "200000 100000\n") == 2)
        #expect(ProcessorBudget.quota(cpuMax: "150000 100000") == 2)
        #expect(ProcessorBudget.quota(cpuMax: "50000 100000") == 1)
        #expect(ProcessorBudget.quota(cpuMax: "") == nil)
        #expect(ProcessorBudget.quota(cpuMax: "garbage") == nil)
        #expect(ProcessorBudget.quota(cpuMax: "100000 0") == nil)
    }

    @Test func aCgroupV1QuotaOfMinusOneIsNoLimit() {
        #expect(ProcessorBudget.quota(cfsQuota: "-1\n", period: "100000\n") == nil)
        #expect(ProcessorBudget.quota(cfsQuota: "350000\n", period: "100000\n") == 4)
    }

    @Test func theCgroupPathsAreFoundInProcSelfCgroup() {
        let hybrid = "9:name=systemd:/\n3:cpu,cpuacct:/kubepods/pod1\n0::/user.slice\n"
        #expect(ProcessorBudget.unifiedCgroupPath(hybrid) == "/user.slice")
        #expect(ProcessorBudget.cpuControllerPath(hybrid) == "/kubepods/pod1")
        #expect(ProcessorBudget.unifiedCgroupPath("3:cpu:/a\n") == nil)
        #expect(ProcessorBudget.cpuControllerPath("0::/a\n2:cpuacct:/b\n") == nil, "cpuacct alone is not the cpu controller")
        #expect(ProcessorBudget.cgroupAndAncestors("/a/b") == ["/a/b", "/a", ""])
        #expect(ProcessorBudget.cgroupAndAncestors("/") == [""])
    }

    @Test func theLowestLimitWinsAndTheBudgetIsNeverZero() {
        #expect(ProcessorBudget(cpus: 8, quota: 2).processors == 2)
        #expect(ProcessorBudget(cpus: 2, quota: 16).processors == 2)
        #expect(ProcessorBudget(cpus: 4, quota: nil).processors == 4)
        #expect(ProcessorBudget(cpus: 0, quota: 0).processors == 1)
    }

    /// The affinity mask is the one `nproc` reads (sched_getaffinity).
    @Test func theCPUsAreTheAffinityMaskNprocSees() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nproc")
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let nproc = try #require(Int(text.split(separator: "\n").first ?? ""))
        #expect(ProcessorBudget.current().cpus == nproc)
    }
}
