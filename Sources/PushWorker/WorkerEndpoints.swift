import HTTPServer
/// The worker's `--http` listener: liveness and readiness from the worker's `WorkerStatus`
/// (readiness also needs App IDs loaded), metrics from its `WorkerMetrics`.
public enum WorkerEndpoints {
    public static func handler(for worker: SendWorker) -> OperationsEndpoints {
        let status = worker.status, catalog = worker.processor.catalog, registry = worker.metrics.registry
        return OperationsEndpoints(
            health: { status.liveness },
            readiness: {
                if let reason = status.readiness { return reason }
                return catalog.current.registry.appIDs.isEmpty ? "no App IDs loaded" : nil
            },
            metrics: { registry.render() })
    }
}
