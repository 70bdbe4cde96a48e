"""Drives the official Firebase Admin SDK for Python (PyPI: firebase-admin) against fcm-emulator.

usage: python3 admin_sdk_send.py BASE_URL SERVICE_ACCOUNT_FILE
The service account's token_uri must point at the emulator's /token. Exits 0 when every check
passes, 1 on a failed check, 3 when firebase-admin is not installed (the caller must FAIL then).
"""
import sys
import warnings

warnings.filterwarnings("ignore", category=DeprecationWarning)  # Message.token (still FCM v1's field)

try:
    import firebase_admin
    from firebase_admin import credentials, exceptions, messaging
except ImportError as error:  # pragma: no cover
    print(f"firebase-admin is not installed (pip install firebase-admin): {error}")
    sys.exit(3)

base_url, account_file = sys.argv[1], sys.argv[2]
# The SDK formats its FCM URL from this class attribute when the messaging service is built.
messaging._MessagingService.FCM_URL = base_url + "/v1/projects/{0}/messages:send"
app = firebase_admin.initialize_app(credentials.Certificate(account_file), name="emulator")
failures = []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + (f": {detail}" if detail and not condition else ""))
    if not condition:
        failures.append(name)


def expect_error(name, token, error_type):
    try:
        messaging.send(messaging.Message(token=token, data={"k": "v"}), app=app)
        check(name, False, "no exception")
    except error_type as error:
        check(name, True)
        return error
    except Exception as error:  # noqa: BLE001
        check(name, False, f"{type(error).__name__}: {error}")


message = messaging.Message(
    token="device-ok",
    notification=messaging.Notification(title="Nuova offerta", body="Scopri i dettagli", image="https://example.com/i.png"),
    data={"mn_message_id": "mnid2m.1.2.3.4.5", "pushdata.promo": "OFFERTA_ESTIVA"},
    android=messaging.AndroidConfig(priority="high", ttl=86400),
    apns=messaging.APNSConfig(headers={"apns-priority": "10"}),
    fcm_options=messaging.FCMOptions(analytics_label="promo"),
)
name = messaging.send(message, app=app)
check("send returns the message name", name.startswith("projects/"), name)
check("dry_run returns the fake name", messaging.send(message, dry_run=True, app=app).endswith("/fake_message_id"))
check("topic send", messaging.send(messaging.Message(topic="news", data={"a": "b"}), app=app).startswith("projects/"))
expect_error("unregistered raises UnregisteredError", "unregistered-1", messaging.UnregisteredError)
expect_error("quota raises QuotaExceededError", "quota-1", messaging.QuotaExceededError)
expect_error("mismatch raises SenderIdMismatchError", "mismatch-1", messaging.SenderIdMismatchError)
expect_error("thirdparty raises ThirdPartyAuthError", "thirdparty-1", messaging.ThirdPartyAuthError)
expect_error("invalid raises InvalidArgumentError", "invalid-1", exceptions.InvalidArgumentError)
check("flaky1 succeeds after the SDK's own retry",
      messaging.send(messaging.Message(token="flaky1-device", data={"a": "b"}), app=app).startswith("projects/"))
try:
    messaging.send(messaging.Message(token="t", data={"google.x": "v"}), app=app)
    check("reserved data key is refused", False, "no exception")
except exceptions.InvalidArgumentError as error:
    check("reserved data key is refused", "google.x" in str(error), str(error))

print("failures:", len(failures))
sys.exit(1 if failures else 0)
