import Connector
print("push-connector: not wired yet")
