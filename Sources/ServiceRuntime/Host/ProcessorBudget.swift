import CSystem
import FoundationEssentials

/// The processors this process may keep busy: the CPUs it may run on (its affinity mask, as
/// `taskset` or a cpuset sets it), fewer when a cgroup CPU quota allows less (a container's CPU
/// limit: cgroup v2's `cpu.max`, v1's `cpu.cfs_quota_us`, of the process's cgroup or of one above
/// it). The worker's default number of lanes, one event loop per processor.
public struct ProcessorBudget: Sendable, Equatable {
    /// CPUs in the affinity mask.
    public let cpus: Int
    /// The lowest cgroup quota, in whole processors rounded up (1.5 CPUs: 2); nil when none.
    public let quota: Int?

    public init(cpus: Int, quota: Int?) {
        self.cpus = max(cpus, 1)
        self.quota = quota.map { max($0, 1) }
    }

    /// How many processors the process may keep busy: at least one.
    public var processors: Int { min(cpus, quota ?? cpus) }

    /// This process's budget, read now (the affinity mask, `/proc/self/cgroup` and the quota
    /// files of its cgroup and the cgroups above it). What cannot be read does not limit.
    public static func current() -> ProcessorBudget {
        let affinity = Int(pc_affinity_cpu_count())
        let cpus = affinity > 0 ? affinity : 1
        guard let membership = read("/proc/self/cgroup") else { return ProcessorBudget(cpus: cpus, quota: nil) }
        var quotas: [Int] = []
        if let path = unifiedCgroupPath(membership) {
            quotas += cgroupAndAncestors(path).compactMap { read("/sys/fs/cgroup\($0)/cpu.max").flatMap(quota(cpuMax:)) }
        }
        if let path = cpuControllerPath(membership) {
            for mount in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"] {
                quotas += cgroupAndAncestors(path).compactMap { dir in
                    guard let quota = read("\(mount)\(dir)/cpu.cfs_quota_us"), let period = read("\(mount)\(dir)/cpu.cfs_period_us") else { return nil }
                    return Self.quota(cfsQuota: quota, period: period)
                }
            }
        }
        return ProcessorBudget(cpus: cpus, quota: quotas.min())
    }

    /// The cgroup v2 path in `/proc/self/cgroup` (its `0::` line); nil without one (cgroup v1 only).
    static func unifiedCgroupPath(_ membership: String) -> String? {
        for line in membership.split(separator: "\n") where line.hasPrefix("0::") {
            let path = line.dropFirst(3)
            return path.hasPrefix("/") ? String(path) : nil
        }
        return nil
    }

    /// The cgroup v1 path of the `cpu` controller in `/proc/self/cgroup` ("3:cpu,cpuacct:/a"); nil without one.
    static func cpuControllerPath(_ membership: String) -> String? {
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[1].split(separator: ",").contains("cpu"), fields[2].hasPrefix("/") else { continue }
            return String(fields[2])
        }
        return nil
    }

    /// `path` and every cgroup above it, the root last ("/a/b": "/a/b", "/a", "").
    static func cgroupAndAncestors(_ path: String) -> [String] {
        var parts = path.split(separator: "/").map(String.init)
        var paths: [String] = []
        while !parts.isEmpty {
            paths.append("/" + parts.joined(separator: "/"))
            parts.removeLast()
        }
        return paths + [""]
    }

    /// Whole processors allowed by a `cpu.max` line ("150000 100000": 1.5 CPUs, so 2; "max
    /// 100000": no limit, nil); nil for anything else.
    static func quota(cpuMax: String) -> Int? {
        let fields = cpuMax.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, fields[0] != "max", let quota = Int(fields[0]), let period = Int(fields[1]),
              quota > 0, period > 0 else { return nil }
        return (quota + period - 1) / period
    }

    /// Whole processors allowed by cgroup v1's `cpu.cfs_quota_us` and `cpu.cfs_period_us`
    /// ("150000", "100000": 2; a quota of -1: no limit, nil).
    static func quota(cfsQuota: String, period: String) -> Int? {
        quota(cpuMax: cfsQuota + " " + period)
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
