import AMQP

extension CommandFailure {
    /// What a command says when a broker step failed: a connection or login that failed says so
    /// once (its message names the node: "cannot connect to amqp://…: …"), not as the step's
    /// failure with the connection's message inside it, nor with the step's guess ("wrong
    /// --prefix?") about a broker it never reached; any other failure is `step`'s, with its error.
    public static func broker(_ error: any Error, command: String, step: String) -> CommandFailure {
        if let failure = error as? AMQPError, failure.code == .connectionFailed || failure.code == .loginFailed {
            return CommandFailure("\(command): \(failure.message)")
        }
        return CommandFailure("\(command): \(step): \(error)")
    }
}
