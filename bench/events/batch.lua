-- wrk script: POST /events with BATCH distinct events per request (env BATCH, default 100).
local counter = 0
local threads = 0
local run = os.getenv("RUN") or "run"
local size = tonumber(os.getenv("BATCH") or "100")
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
request = function()
  local items = {}
  for i = 1, size do
    counter = counter + 1
    items[i] = string.format(
      '{"event_type":"click","mn_message_id":"mnid2m.%d.1.2.3.4","app_id":"bench","occurred_at":"2026-11-29T21:05:00Z","event_id":"%s-%d-%d"}',
      counter % 100000, run, tid, counter)
  end
  return wrk.format("POST", "/events", {["Content-Type"] = "application/json"}, '{"events":[' .. table.concat(items, ",") .. ']}')
end
