-- wrk script: each request is one line of the targets file ($BENCH_TARGETS):
-- METHOD <tab> PATH <tab> BODY or - <tab> TOKEN <tab> GROUP.
-- The same lines feed the pgbench scripts, so both sides see the same mix.
--
-- Two ways to pick a line:
-- - by default any line, at random, on every connection;
-- - with BENCH_PER_CONNECTION=1 (and wrk run with one thread per
--   connection), each connection is a client of one group (the groups in
--   turn: connection k of n groups takes group k mod n) and picks at random
--   among that group's lines only, as pgbench's clients do (bench.py,
--   `run_pgbench`): a user's sends then never run two at once on one side
--   only.
local targets = {}
local groups, order = {}, {}
for line in io.lines(os.getenv("BENCH_TARGETS")) do
  local method, path, body, token, group = line:match("^(%S+)\t(%S+)\t(%S+)\t(%S+)\t(%S+)$")
  if not method then
    -- Without a group, a line is a group of its own.
    method, path, body, token = line:match("^(%S+)\t(%S+)\t(%S+)\t(%S+)$")
    group = tostring(#targets + 1)
  end
  if method then
    local t = { method, path, body, token }
    targets[#targets + 1] = t
    if not groups[group] then
      groups[group] = {}
      order[#order + 1] = group
    end
    table.insert(groups[group], t)
  end
end

-- Runs once per thread, in the main state: numbers the threads.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("slot", threads)
end

-- Each thread its own sequence, and its own lines.
math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)
local mine = targets

function init(args)
  if os.getenv("BENCH_PER_CONNECTION") == "1" then
    mine = groups[order[((slot - 1) % #order) + 1]]
  end
end

request = function()
  local t = mine[math.random(#mine)]
  local headers = { ["Authorization"] = "Bearer " .. t[4] }
  local body = nil
  if t[3] ~= "-" then
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    body = t[3]
  end
  return wrk.format(t[1], t[2], headers, body)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "BENCH requests=%d duration_us=%d p50_us=%d p90_us=%d p95_us=%d p98_us=%d p99_us=%d max_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(95), latency:percentile(98), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
