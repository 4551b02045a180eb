-- gcra.lua: GCRA for a batch of requests against one key, in order, at
-- one instant. Every decision, reservation and give-back of a Limiter or
-- a Keyed is one call of it (or of lean.lua, its form for one request).
--
-- Time is integer microseconds since the Unix epoch, read once from Redis
-- TIME. Lua numbers are doubles, exact for integers below 2^53 (about 285
-- years of microseconds since 1970); the limiter checks at construction
-- that every quantity the script forms stays below that, and the script
-- refuses arguments that are not integers in range. Durations finer than
-- a microsecond (one unit of 3/s lasts 333333 1/3 µs) are kept exact as a
-- pair: whole microseconds and ticks of 1/C µs, 0 <= ticks < C.
--
-- The key holds W, F, N and M, four little-endian float64s (32 bytes,
-- struct.pack('<dddd'); every one an integer below 2^53): the theoretical
-- arrival time (TAT) as whole µs W and ticks F; N, a count of the
-- script's writes to the key, so that two values are equal only if
-- nothing was written in between (a give-back checks it); and M, the
-- latest TAT the key ever held, rounded up to the µs. Binary rather than
-- text because reading and writing it is then about a tenth of the
-- script's Lua work instead of most of it. The key expires at M (PX,
-- rounded up to the millisecond): that is the TAT itself, its reset time,
-- unless a give-back moved the TAT back. From then on a missing key and
-- the stored TAT decide alike, and a key made afresh starts beyond every
-- value the old one held, so no value ever repeats. A value that is not
-- this (nor the text form "W:F:N:M" of earlier releases) is refused with
-- an error, and so is a key of another type (WRONGTYPE).
--
--   KEYS[1]  the limit's key
--   ARGV[1]  P: ticks one unit of cost occupies (the emission interval)
--   ARGV[2]  C: ticks per microsecond
--   ARGV[3]  tau = burst*P ticks, how far the TAT may run ahead: whole µs
--   ARGV[4]  tau: the ticks beyond ARGV[3]
--   ARGV[5]  "0" to read Redis TIME, or the instant in µs to decide at
--            instead (tests that drive time themselves)
--   ARGV[6]  give-back: W, F and N as the key holds them (its first 24
--            bytes), the value it must still hold, or "" for none
--   ARGV[7]  give-back: whole µs to move the TAT back (never before now)
--   ARGV[8]  give-back: the ticks beyond ARGV[7]
--   ARGV[9]  the requests, in order: "cost:maxwait,cost:maxwait:n,...",
--            maxwait in µs, -1 for none (0: granted now or not at all),
--            and n, if given (at most 1,000,000), the number of requests in
--            a row that are alike (a pool's workers asking for one unit
--            each send one entry)
--   ARGV[10] optional: the caller's floor for the TAT, W and F as two
--            little-endian float64s (16 bytes), or "" for none: the end of
--            the latest admission the calling process holds (floor.go).
--            The TAT is raised to it before anything else is decided, so
--            that a key Redis lost (FLUSHALL, a restart without
--            persistence, an eviction, a failover to a replica that
--            lagged) is never behind what this process was given
--   ARGV[11] optional, with a give-back: the call's id, unique among the
--            calling limiter's (replay.go)
--   ARGV[12] with ARGV[11]: how long to keep the reply, in ms
--   KEYS[2]  with ARGV[11]: the calling limiter's replay key, in KEYS[1]'s
--            slot. A run that finds "id:" and a reply there answers that
--            reply and changes nothing: it is go-redis sending the call
--            again after its reply was lost. Otherwise the reply is kept
--            there, after "id:", for ARGV[12] ms.
--
-- The reply is one string of little-endian float64s (every one an integer
-- of magnitude below 2^53): now, the instant decided at; gave, 1 if the
-- give-back moved the TAT back; then for each request its code: its
-- admission instant in µs, rounded up (now for granted now, later for a
-- reservation: the TAT moves on either way); -wait (wait >= 1 µs, the
-- time until it would be admitted) for one refused because that is beyond
-- its maxwait; 0 for a cost that can never be admitted (above the burst;
-- the limiter never sends one). Last comes the key's value afterwards (32
-- bytes; none when there is no key). A packed string and run-length
-- entries rather than an array and one entry per request: at a few dozen
-- requests a call, parsing the list and replying with one integer per
-- request were most of the script's time.
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local P, C = tonumber(ARGV[1]), tonumber(ARGV[2])
local tauW, tauF = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local function int(x, lo) return x and x == x and x % 1 == 0 and x >= lo and x < 9007199254740992 end
if not (int(P, 1) and int(C, 1) and int(tauW, 0) and int(tauF, 0) and tauF < C and int(now, 0)
    and int(tonumber(ARGV[7]), 0) and int(tonumber(ARGV[8]), 0) and tonumber(ARGV[8]) < C) then
  return redis.error_reply('ERR sluice: the arguments are not integers in range')
end
local id = ARGV[11]
if id then
  id = id .. ':'
  local kept = redis.call('GET', KEYS[2])
  if kept and string.sub(kept, 1, #id) == id then return string.sub(kept, #id + 1) end
end
-- now: Redis TIME as integer µs, unless the caller gave the instant.
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- a / b for integers below 2^53: the float quotient may round, so correct it.
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then q, r = q - 1, r + b elseif r >= b then q, r = q + 1, r - b end
  return q, r
end

-- The key's value: the TAT tw (whole µs) and tf (ticks), the write count
-- seq and the latest TAT top; cur is the value as read, packed ("" for no
-- key). The text form of earlier releases is answered packed, so that a
-- deploy finds its keys as they were. A value that is neither, or whose
-- numbers are not integers in range, is not the limiter's: the call fails
-- rather than decide on it. A TAT in the past is idle time, never banked:
-- it reads as now.
local cur = redis.call('GET', key)
local tw, tf, seq, top = now, 0, 0, 0
if cur then
  if #cur == 32 then
    tw, tf, seq, top = struct.unpack('<dddd', cur)
  else
    local w, f, n, m = string.match(cur, '^(%d+):(%d+):(%d+):(%d+)$')
    tw, tf, seq, top = tonumber(w) or -1, tonumber(f), tonumber(n), tonumber(m)
  end
  if not (tw >= 0 and tw < 9007199254740992 and tf >= 0 and tf < C and seq >= 0 and seq < 9007199254740992
      and top >= 0 and top < 9007199254740992 and tw % 1 == 0 and tf % 1 == 0 and seq % 1 == 0 and top % 1 == 0) then
    return redis.error_reply('ERR sluice: ' .. key .. ' does not hold a sluice TAT')
  end
  if #cur ~= 32 then cur = struct.pack('<dddd', tw, tf, seq, top) end
else
  cur = ''
end
if tw < now then tw, tf = now, 0 end

local fw, ff = 0, 0
local floor = ARGV[10]
if floor and floor ~= '' then
  if #floor ~= 16 then return redis.error_reply('ERR sluice: the floor is not 16 bytes') end
  fw, ff = struct.unpack('<dd', floor)
end
-- The floor raises the TAT; it is never beyond the TAT the key would
-- hold had nothing been lost (floor.go).
if not (fw >= 0 and fw < 9007199254740992 and fw % 1 == 0 and ff >= 0 and ff < C and ff % 1 == 0) then
  return redis.error_reply('ERR sluice: the floor is not an instant')
end
local raised = fw > tw or (fw == tw and ff > tf)
if raised then tw, tf = fw, ff end

local changed, gave = raised, 0
if ARGV[6] ~= '' and string.sub(cur, 1, 24) == ARGV[6] then
  -- Nothing was written since the caller's admissions: take them back,
  -- but not before now (a slot already past gives nothing back).
  local nw, nf = tw - tonumber(ARGV[7]), tf - tonumber(ARGV[8])
  if nf < 0 then nw, nf = nw - 1, nf + C end
  if nw < now then nw, nf = now, 0 end
  if nw ~= tw or nf ~= tf then tw, tf, changed, gave = nw, nf, true, 1 end
end

-- The codes go out packed, in order: a run granted now as one repeated
-- string (a table entry per request, packed at the end, made Redis's time
-- per call at 64 callers 47 µs instead of 39), the others through out,
-- flushed in chunks (unpack and struct.pack take a bounded number of
-- values).
local parts, out, k = {struct.pack('<dd', now, gave)}, {}, 0
local function flush()
  for i = 1, k, 200 do
    local j = math.min(i + 199, k)
    parts[#parts + 1] = struct.pack('<' .. string.rep('d', j - i + 1), unpack(out, i, j))
  end
  k = 0
end
local inc = {} -- c·P as whole µs and ticks, per cost seen
for c, mw, n in string.gmatch(ARGV[9], '(%d+):(%-?%d+):?(%d*)') do
  c, mw, n = tonumber(c), tonumber(mw), tonumber(n) or 1
  -- Digits, so integers. A run too long would hold Redis; a maxwait
  -- beyond 2^53 or below -1 only waits without limit, as -1 does. (Checks
  -- by call here were a fifth of the script's time at 40 entries.)
  if n > 1000000 then return redis.error_reply('ERR sluice: the requests are not integers in range') end
  local ci = inc[c]
  if not ci then
    if not int(c, 1) then return redis.error_reply('ERR sluice: the requests are not integers in range') end
    ci = {divmod(c * P, C)}; inc[c] = ci
  end
  local iw, ifr = ci[1], ci[2]
  if iw > tauW or (iw == tauW and ifr > tauF) then
    for _ = 1, n do k = k + 1; out[k] = 0 end
  else
    -- The first j of the run fit now, one behind the other: as many
    -- spans c·P as the room now + tau - TAT holds, in ticks (below tau, so
    -- exact). They are granted now and move the TAT on together; the rest
    -- are decided one by one.
    local j = 0
    if tw - now <= tauW then
      local room = (tauW - (tw - now)) * C + tauF - tf
      if room > 0 then j = math.min(n, (divmod(room, c * P))) end
    end
    if j > 0 then
      flush()
      parts[#parts + 1] = string.rep(struct.pack('<d', now), j)
      local q, r = divmod(tf + j * ifr, C)
      tw, tf, changed = tw + j * iw + q, r, true
    end
    for _ = j + 1, n do
      k = k + 1
      -- c fits from T = TAT + c·P - tau, rounded up to whole µs.
      -- (A comparison rather than math.max: this runs once per request.)
      local sw, sf = tw + iw - tauW, tf + ifr - tauF
      if sf < 0 then sw, sf = sw - 1, sf + C elseif sf >= C then sw, sf = sw + 1, sf - C end
      if sf > 0 then sw = sw + 1 end
      local at = sw
      if at < now then at = now end
      if mw >= 0 and at - now > mw then
        out[k] = now - at
      else
        tw, tf = tw + iw, tf + ifr
        if tf >= C then tw, tf = tw + 1, tf - C end
        out[k] = at
        changed = true
      end
    end
  end
end

if changed then
  -- The key expires at the latest TAT it ever held: the TAT itself, unless
  -- a give-back moved it back. Its write count then outlives every value
  -- it held, and a key made after it expired starts beyond all of them, so
  -- no value ever repeats.
  local up = tw
  if tf > 0 then up = up + 1 end
  if up > top then top = up end
  seq = seq + 1
  cur = struct.pack('<dddd', tw, tf, seq, top)
  redis.call('SET', key, cur, 'PX', math.ceil((top - now) / 1000))
end
flush()
parts[#parts + 1] = cur
local reply = table.concat(parts)
if id then redis.call('SET', KEYS[2], id .. reply, 'PX', tonumber(ARGV[12])) end
return reply
