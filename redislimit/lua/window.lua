-- window.lua: an exact sliding window for a batch of requests against one
-- key, in order, at one instant, with settlements: the window's events
-- keep their instant and their amount, and a settlement changes the
-- amount, as an API that charges an estimate on arrival and the real usage
-- once it answers does. It is the only script a Window runs.
--
-- The key is a hash. Its field "e" is the instant the key was made (the
-- epoch: receipts of an earlier key of the same name are told apart by
-- it), "lo" the oldest event that may still be in the window, "hi" the
-- latest event's id, "tot" the amount of the events kept, "last" the
-- latest event's instant, "t" the latest instant it decided at: the key's
-- time never goes back, even if Redis's clock does, since what left the
-- window is gone. Each event is the field of its id (1, 2, ...: ids never
-- repeat within an epoch), valued "at:amount:settled". Events are made in
-- order of their instants, so the oldest have the smallest ids, and the
-- window is (now-W, now]: an event at a counts until a+W. A key whose
-- fields are not this (not integers, a negative total or id range, an
-- event that does not parse, a total that the events walked contradict)
-- is refused with an error, and so is a key of another type (WRONGTYPE):
-- the script never admits from a state it cannot have written.
--
-- A request of cost c is admitted at the earliest instant T, no earlier
-- than now and than the latest event, at which the events still in the
-- window at T leave room for c: if the window has room now, T is now (or
-- the latest event's instant); otherwise T is when enough of the oldest
-- events have left. Since every event is at or before T, no window ending
-- after T holds more than the one ending at T, so the limit holds in every
-- window. T after now is a reservation: the caller waits for it locally.
-- Taking an amount out of an event (a settlement for less, a give-back)
-- never makes any window hold more, so it is always safe; a settlement for
-- more adds the difference to the event (a debt later admissions wait for).
--
-- Cost per call: the event that must leave is found by walking from
-- whichever end is nearer in amount (the oldest events when the excess is
-- small, else back from the newest, where at most L - c of amount fits),
-- so that a call reads at most about L events (plus the events settled to
-- nothing among them) whatever the number of reservations held: with 4,000
-- held on a limit of 10 a call reads a dozen, where walking from the
-- oldest read 4,000 (issue 26). Events read are kept for the call.
--
-- The key expires when its latest event leaves the window; its epoch then
-- starts again from the instant it is made afresh.
--
--   KEYS[1]  the window's key
--   ARGV[1]  L: the limit, the most the window holds
--   ARGV[2]  W: the window, in µs
--   ARGV[3]  "0" to read Redis TIME, or the instant in µs to decide at
--   ARGV[4]  settlements, applied first: "epoch:id:amount:final,..."; a
--            final one (a caller's Settle or Refund) marks the event
--            settled, and is refused for one settled before; a give-back
--            (final 0, amount 0) deletes the event
--   ARGV[5]  the requests, in order: "cost:maxwait,...", maxwait in µs, -1
--            for none (0: granted now or not at all)
--   ARGV[6]  moves, applied after the settlements and before the requests:
--            "epoch:id,...", reservations of the caller's that may move
--            earlier, since what was settled or given back meanwhile (by
--            any process) may make room for them sooner
--   ARGV[7]  a pause: the instant in µs before which nothing more is
--            admitted (moves included), "0" for none; a pause never
--            shortens one before. It is the field "hold", and the key
--            lives until it is over.
--   ARGV[8]  optional, with settlements: the call's id, unique among the
--            calling window's (replay.go)
--   ARGV[9]  with ARGV[8]: how long to keep the reply, in ms
--   KEYS[2]  with ARGV[8]: the calling window's replay key, in KEYS[1]'s
--            slot. A run that finds "id:" there answers the reply kept
--            after it and changes nothing; otherwise the reply is kept
--            there, after "id:", for ARGV[9] ms.
--
-- Every number is an integer below 2^53; arguments that are not (NaN,
-- infinities, a negative limit) are refused with an error.
--
-- The reply is {now, epoch, first, hold, s1, ..., m1, ..., r1, ...}: the
-- instant decided at (never before the one of the call before); the key's
-- epoch; the id of the first event this call made (the admitted requests
-- have first, first+1, ... in order); the pause's end in µs (0: none), so
-- that every process learns of a pause with its next call; for each
-- settlement 1 (applied), 2 (nothing to apply: the event has left the
-- window or belongs to another epoch) or 0 (refused: settled before); for
-- each move the reservation's new instant, or 0 if it stays; and for each
-- request its admission instant in µs (now, or later for a reservation),
-- -wait (wait >= 1 µs) for one refused because that is beyond its
-- maxwait, or 0 for a cost above the limit.
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local L, W = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local pause = tonumber(ARGV[7]) or 0
local function int(x, lo) return x and x == x and x % 1 == 0 and x >= lo and x < 9007199254740992 end
if not (int(L, 1) and int(W, 1) and int(now, 0) and int(pause, 0)) then
  return redis.error_reply('ERR sluice: the arguments are not integers in range')
end
local id = ARGV[8]
if id then
  -- A call run again by a client's retry answers its first run's reply.
  id = id .. ':'
  local kept = redis.call('GET', KEYS[2])
  if kept and string.sub(kept, 1, #id) == id then
    local t = {}
    for x in string.gmatch(string.sub(kept, #id + 1), '%-?%d+') do t[#t + 1] = tonumber(x) end
    return t
  end
end
-- now: Redis TIME as integer µs, unless the caller gave the instant.
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function str(x) return string.format('%d', x) end
local function bad() return {err = 'ERR sluice: ' .. key .. ' does not hold a sluice window'} end

local m = redis.call('HMGET', key, 'e', 'lo', 'hi', 'tot', 'last', 't', 'hold')
local ep, lo, hi, tot, last, seen, hold = now, 1, 0, 0, 0, 0, 0
if m[1] then
  ep, lo, hi, tot, last, seen, hold = tonumber(m[1]), tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6]), tonumber(m[7] or '0')
  if not (int(ep, 0) and int(lo, 1) and int(hi, 0) and hi >= lo - 1 and int(tot, 0) and int(last, 0)
      and int(seen, 0) and int(hold, 0)) then
    return bad()
  end
end
-- The key's time never goes back: what left the window stays gone.
now = math.max(now, seen)
local changed = false
-- A pause: nothing is admitted before it; a later one extends it.
if pause > hold then hold, changed = pause, true end

-- The events read so far: id -> {at, amount, settled}, or false for none.
-- ev reads event i (nil for none; a value that does not parse, which no
-- run of this script writes, fails the call); put and del write one.
local evs = {}
local function ev(i)
  local e = evs[i]
  if e == nil then
    local v = redis.call('HGET', key, str(i))
    e = false
    if v then
      local a, c, f = string.match(v, '^(%d+):(%d+):([01])$')
      a, c = tonumber(a), tonumber(c)
      if not (int(a, 0) and int(c, 0)) then error(bad()) end
      e = {a, c, f}
    end
    evs[i] = e
  end
  if e then return e[1], e[2], e[3] end
  return nil
end
local function put(i, a, c, f)
  evs[i] = {a, c, f}
  redis.call('HSET', key, str(i), str(a) .. ':' .. str(c) .. ':' .. f)
end
local function del(i)
  evs[i] = false
  redis.call('HDEL', key, str(i))
end

-- The events that have left the window go.
while lo <= hi do
  local a, c = ev(lo)
  if a then
    if a > now - W then break end
    del(lo)
    tot, changed = tot - c, true
  end
  lo = lo + 1
end
if tot < 0 or (lo > hi and tot ~= 0) then return bad() end

local out = {now, ep, hi + 1, hold}
local relast = false
for sep, sid, amt, fin in string.gmatch(ARGV[4], '(%d+):(%d+):(%d+):([01])') do
  local res = 2
  sid, amt = tonumber(sid), tonumber(amt)
  if not int(amt, 0) then return redis.error_reply('ERR sluice: the settlements are not integers in range') end
  if tonumber(sep) == ep and sid >= lo and sid <= hi then
    local a, c, f = ev(sid)
    if a and f == '1' then
      res = 0
    elseif a then
      tot, res, changed = tot + amt - c, 1, true
      if fin == '0' and amt == 0 then
        del(sid)
        if a == last then relast = true end
      else
        put(sid, a, amt, fin)
      end
    end
  end
  out[#out + 1] = res
end

-- before returns the instant of the latest event before id i, 0 if none.
local function before(i)
  for j = i - 1, lo, -1 do
    local a = ev(j)
    if a then return a end
  end
  return 0
end

-- back returns the earliest instant, no earlier than at, at which c more
-- fits given the events before id upto, walking back from the newest of
-- them: the first whose amount, with those after it and c, is beyond L
-- must leave first. It reads at most about L - c of amount. Reaching the
-- oldest, it has summed every event before upto: when upto is past the
-- newest, that sum is tot, or the key is not the script's (nil).
local function back(c, at, upto)
  local s = c
  for j = upto - 1, lo, -1 do
    local a, ec = ev(j)
    if a then
      s = s + ec
      if s > L then return math.max(at, a + W) end
    end
  end
  if upto > hi and s - c ~= tot then return nil end
  return at
end

-- Moves: a reservation whose owner asks is admitted again against the
-- events before it, as if it had asked now, and moves to that instant if
-- it is earlier; never before the event before it, so that the events
-- stay in order of their instants. The windows that gain it hold only
-- the events before it; the ones that lose it only hold less.
for sep, mid in string.gmatch(ARGV[6], '(%d+):(%d+)') do
  local res = 0
  mid = tonumber(mid)
  if tonumber(sep) == ep and mid >= lo and mid <= hi then
    local a, c, f = ev(mid)
    if a and f == '0' and a > now then
      local at = back(c, math.max(now, before(mid), hold), mid)
      if not at then return bad() end
      if at < a then
        put(mid, at, c, '0')
        res, changed, relast = at, true, true
      end
    end
  end
  out[#out + 1] = res
end

if relast then
  -- The latest event was given back, or moved: admissions need only
  -- follow the latest one left, where it is now.
  last = before(hi + 1)
end

-- A request's excess, what must leave before it fits, is found from the
-- nearer end: forward from the oldest when it is at most L - c (the
-- events from the oldest on, as far as the requests so far needed to
-- look, are kept with their running amounts), else back from the newest.
local wa, wc, wn, nxt = {}, {}, 0, lo
local function forward(excess)
  while (wn == 0 or wc[wn] < excess) and nxt <= hi do
    local a, ec = ev(nxt)
    nxt = nxt + 1
    if a and ec > 0 then
      wn = wn + 1
      wa[wn], wc[wn] = a, ec + (wc[wn - 1] or 0)
    end
  end
  if wn == 0 or wc[wn] < excess then return nil end -- tot is more than the events hold
  local i, j = 1, wn
  while i < j do
    local h = math.floor((i + j) / 2)
    if wc[h] >= excess then j = h else i = h + 1 end
  end
  return wa[i] + W
end

for c, mw in string.gmatch(ARGV[5], '(%d+):(%-?%d+)') do
  c, mw = tonumber(c), tonumber(mw)
  if not (int(c, 0) and int(mw, -1)) then
    return redis.error_reply('ERR sluice: the requests are not integers in range')
  end
  if c > L then
    out[#out + 1] = 0
  else
    local at = math.max(now, last, hold)
    local excess = tot + c - L
    if excess > 0 then
      local from
      if excess <= L - c then from = forward(excess) else from = back(c, at, hi + 1) end
      if not from then return bad() end
      at = math.max(at, from)
    end
    if mw >= 0 and at - now > mw then
      out[#out + 1] = math.min(now - at, -1)
    else
      hi = hi + 1
      put(hi, at, c, '0')
      tot, last, changed = tot + c, at, true
      out[#out + 1] = at
    end
  end
end

if lo > hi and hold <= now then
  if m[1] then redis.call('DEL', key) end -- nothing left in the window, no pause ahead
elseif changed or now > seen then
  redis.call('HSET', key, 'e', str(ep), 'lo', str(lo), 'hi', str(hi), 'tot', str(tot), 'last', str(last), 't', str(now), 'hold', str(hold))
  redis.call('PEXPIRE', key, str(math.floor((math.max(last + W, hold) - now) / 1000) + 1))
end
if id then
  local kept = {}
  for i, x in ipairs(out) do kept[i] = str(x) end
  redis.call('SET', KEYS[2], id .. table.concat(kept, ','), 'PX', tonumber(ARGV[9]))
end
return out
