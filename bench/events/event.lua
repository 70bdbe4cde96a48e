-- wrk script: POST /event, each request a distinct event (its own event_id), so every one is
-- stored (no duplicate short-cut). event_id = <RUN env>-<thread>-<counter>.
local counter = 0
local threads = 0
local run = os.getenv("RUN") or "run"
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
request = function()
  counter = counter + 1
  local body = string.format(
    '{"event_type":"open","mn_message_id":"mnid2m.%d.1.2.3.4","app_id":"bench","occurred_at":"2026-11-29T21:05:00Z","event_id":"%s-%d-%d"}',
    counter % 100000, run, tid, counter)
  return wrk.format("POST", "/event", {["Content-Type"] = "application/json"}, body)
end
