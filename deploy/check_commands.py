#!/usr/bin/env python3
"""Runs every push-connector command line of the deployment files with --check, on this host.

Reads docker-compose.yml, deploy/k8s/*.yaml and deploy/systemd/*.service; for each command
line that runs push-connector (service commands, healthchecks, container args, ExecStart=)
it builds, under a temporary root, the files that line would see in its container or unit
(ConfigMaps and Secrets mounted where the pod mounts them, the compose init service's output,
LoadCredential= files, state directories; placeholders become a throwaway service account),
rewrites absolute paths under that root, and runs `push-connector ARGS --check` with the
line's environment. Exit status 1 if any line fails. Usage: check_commands.py BIN_DIR ROOT
"""
import json, os, shlex, shutil, subprocess, sys, glob
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PUSH = os.path.join(BIN, "push-connector")
failures, checked = [], 0


def under_root(path):
    return ROOT + path if path.startswith("/") else path


def map_value(v):
    v = str(v)
    return under_root(v) if v.startswith("/") else v


def service_account(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        subprocess.run([os.path.join(BIN, "fcm-emulator"), "make-service-account", "--project", "shop-prod",
                        "--token-uri", "https://oauth2.googleapis.com/token", "--out", path], check=True, capture_output=True)


def write_file(path, text):
    """Writes a mounted file; an App ID file's credentials_file paths move under the root."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        doc = json.loads(text)
        if isinstance(doc, dict) and isinstance(doc.get("apps"), list):
            for app in doc["apps"]:
                if str(app.get("credentials_file", "")).startswith("/"):
                    app["credentials_file"] = under_root(app["credentials_file"])
            text = json.dumps(doc)
    except ValueError:
        pass
    with open(path, "w") as f:
        f.write(text)


def run(origin, argv, env):
    global checked
    argv = [map_value(a) if not a.startswith("http") else a for a in argv]
    if "--check" not in argv:
        argv = argv + ["--check"]
    full_env = {"PATH": "/usr/bin:/bin"}
    full_env.update({k: map_value(v) for k, v in env.items()})
    p = subprocess.run([PUSH] + argv, env=full_env, capture_output=True, text=True, cwd="/")
    checked += 1
    shown = "push-connector " + " ".join(shlex.quote(a.replace(ROOT, "")) for a in argv)
    if p.returncode == 0:
        print(f"ok    {origin}: {shown}")
    else:
        print(f"FAIL  {origin}: {shown} (exit {p.returncode})\n{p.stdout}{p.stderr}")
        failures.append(origin)


def compose():
    path = os.path.join(REPO, "docker-compose.yml")
    doc = yaml.safe_load(open(path))
    volumes_made = set()
    for name, svc in doc["services"].items():
        for volume in svc.get("volumes", []):
            source, target = volume.split(":")[:2]
            if source.startswith("./"):
                src = os.path.join(REPO, source[2:])
                for directory, _, files in os.walk(src):
                    for f in files:
                        relative = os.path.relpath(os.path.join(directory, f), src)
                        with open(os.path.join(directory, f), "rb") as source_file:
                            data = source_file.read()
                        try:
                            write_file(under_root(target) + "/" + relative, data.decode("utf-8"))
                        except UnicodeDecodeError:  # not text (a build product): copied as it is
                            os.makedirs(os.path.dirname(under_root(target) + "/" + relative), exist_ok=True)
                            with open(under_root(target) + "/" + relative, "wb") as copy:
                                copy.write(data)
            elif source == "dev-secrets" and source not in volumes_made:
                # What the init service does, run here: deploy/compose/init.sh.
                env = dict(os.environ, SECRETS_DIR=under_root(target), TOOLS_DIR=os.path.join(REPO, "scripts"),
                           PATH=BIN + ":" + os.environ["PATH"])
                subprocess.run(["sh", os.path.join(REPO, "deploy/compose/init.sh")], env=env, check=True, capture_output=True)
                volumes_made.add(source)
            else:
                os.makedirs(under_root(target), exist_ok=True)
    for name, svc in doc["services"].items():
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        pushes = str(svc.get("image", "")).startswith("push-connector:")
        if pushes and "entrypoint" not in svc:
            run(f"docker-compose.yml {name}", [str(a) for a in svc["command"]], env)
        test = (svc.get("healthcheck") or {}).get("test") or []
        if len(test) > 1 and test[0] == "CMD" and test[1] == "push-connector":
            run(f"docker-compose.yml {name} healthcheck", [str(a) for a in test[2:]], env)


def kubernetes():
    docs = []
    for path in sorted(glob.glob(os.path.join(REPO, "deploy/k8s/*.yaml"))):
        docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(open(path)) if d]
    config_maps = {d["metadata"]["name"]: d.get("data", {}) for _, d in docs if d["kind"] == "ConfigMap"}
    secrets = {d["metadata"]["name"]: d.get("stringData", {}) for _, d in docs if d["kind"] == "Secret"}
    for file, d in docs:
        spec = d.get("spec", {})
        if d["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if "template" not in spec:
            continue
        pod = spec["template"]["spec"]
        pod_root = f"/k8s/{d['metadata']['name']}"
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in pod["containers"]:
            if "push-connector" not in c["image"]:
                continue
            for m in c.get("volumeMounts", []):
                target = pod_root + m["mountPath"]
                v = volumes.get(m["name"], {})
                if "configMap" in v:
                    for key, text in config_maps[v["configMap"]["name"]].items():
                        write_file(under_root(target) + "/" + key, text.replace('"/', '"' + pod_root + "/"))
                elif "secret" in v:
                    for key, text in secrets[v["secret"]["secretName"]].items():
                        if key.endswith(".json") and text.startswith("REPLACE_ME"):
                            service_account(under_root(target) + "/" + key)
                        else:
                            write_file(under_root(target) + "/" + key, text)
                else:
                    os.makedirs(under_root(target), exist_ok=True)
            argv = (c.get("command", ["push-connector"])[1:]) + c.get("args", [])
            env = {}
            for e in c.get("env", []):
                ref = e.get("valueFrom", {}).get("secretKeyRef", {})
                value = e.get("value", secrets.get(ref.get("name"), {}).get(ref.get("key"), "placeholder"))
                env[e["name"]] = pod_root + value if value.startswith("/") else value
            run(f"deploy/k8s/{file} {d['kind']}/{d['metadata']['name']}",
                [pod_root + a if a.startswith("/") else a for a in argv], env)


def systemd():
    for path in sorted(glob.glob(os.path.join(REPO, "deploy/systemd/*.service"))):
        unit = os.path.basename(path)
        unit_root = f"/systemd/{unit}"
        # deploy/systemd holds the files installed in /etc/push-connector.
        for f in glob.glob(os.path.join(REPO, "deploy/systemd/*")):
            if not f.endswith(".service"):
                text = open(f).read().replace('"/', '"' + unit_root + "/")
                write_file(under_root(unit_root + "/etc/push-connector/" + os.path.basename(f)), text)
        credentials = f"/run/credentials/{unit}"
        env, lines = {}, []
        for raw in open(path):
            line = raw.strip()
            if "=" not in line or line.startswith("#"):
                continue
            key, value = line.split("=", 1)
            value = value.replace("%d", credentials).replace("%S", "/var/lib")
            if key == "EnvironmentFile":
                for e in open(under_root(unit_root + value.lstrip("-"))):
                    e = e.strip()
                    if e and not e.startswith("#"):
                        k, v = e.split("=", 1)
                        env[k] = v
            elif key == "Environment":
                for assignment in shlex.split(value):
                    k, v = assignment.split("=", 1)
                    env[k] = unit_root + v if v.startswith("/") else v
            elif key == "LoadCredential":
                name = value.split(":", 1)[0]
                target = under_root(unit_root + credentials + "/" + name)
                if name.endswith(".json"):
                    service_account(target)
                else:
                    write_file(target, "placeholder-secret\n")
            elif key == "StateDirectory":
                for d in value.split():
                    os.makedirs(under_root(unit_root + "/var/lib/" + d), exist_ok=True)
            elif key in ("ExecStart", "ExecStartPre"):
                lines.append((key, value.lstrip("-@+!")))
        for key, value in lines:
            argv = shlex.split(value)
            if not argv[0].endswith("/push-connector"):
                continue
            run(f"deploy/systemd/{unit} {key}", [unit_root + a if a.startswith("/") else a for a in argv[1:]], env)


compose()
kubernetes()
systemd()
print(f"{checked} command lines checked, {len(failures)} failed")
sys.exit(1 if failures or checked == 0 else 0)
