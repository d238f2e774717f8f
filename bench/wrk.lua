-- wrk script: each request is one line of the targets file ($BENCH_TARGETS),
-- picked at random: METHOD <tab> PATH <tab> BODY or - <tab> TOKEN.
-- The same lines feed the pgbench scripts, so both sides see the same mix.
local targets = {}
for line in io.lines(os.getenv("BENCH_TARGETS")) do
  local method, path, body, token = line:match("^(%S+)\t(%S+)\t(%S+)\t(%S+)$")
  if method then
    targets[#targets + 1] = { method, path, body, token }
  end
end

-- Each thread its own sequence.
math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)"), 16) % 100000)

request = function()
  local t = targets[math.random(#targets)]
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
    "BENCH requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
