
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local L, W = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = tonumber(ARGV[3])
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
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function str(x) return string.format('%d', x) end

local m = redis.call('HMGET', key, 'e', 'lo', 'hi', 'tot', 'last', 't', 'hold')
local ep, lo, hi, tot, last, seen, hold = now, 1, 0, 0, 0, 0, 0
if m[1] then
  ep, lo, hi, tot, last, seen, hold = tonumber(m[1]), tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), tonumber(m[5]), tonumber(m[6]), tonumber(m[7] or '0')
  if not (ep and lo and hi and tot and last and seen and hold) then
    return redis.error_reply('ERR sluice: ' .. key .. ' does not hold a sluice window')
  end
end
-- The key's time never goes back: what left the window stays gone.
now = math.max(now, seen)
local changed = false
-- A pause: nothing is admitted before it; a later one extends it.
local pause = tonumber(ARGV[7]) or 0
if pause > hold then hold, changed = pause, true end

-- ev reads event id: its instant, amount and settled flag, or nil.
local function ev(id)
  local v = redis.call('HGET', key, str(id))
  if not v then return nil end
  local a, c, f = string.match(v, '^(%d+):(%d+):([01])$')
  if not a then return nil end
  return tonumber(a), tonumber(c), f
end

-- The events that have left the window go.
while lo <= hi do
  local a, c = ev(lo)
  if a then
    if a > now - W then break end
    redis.call('HDEL', key, str(lo))
    tot, changed = tot - c, true
  end
  lo = lo + 1
end

local out = {now, ep, hi + 1, hold}
local relast = false
for sep, id, amt, fin in string.gmatch(ARGV[4], '(%d+):(%d+):(%d+):([01])') do
  local res = 2
  id, amt = tonumber(id), tonumber(amt)
  if tonumber(sep) == ep and id >= lo and id <= hi then
    local a, c, f = ev(id)
    if a and f == '1' then
      res = 0
    elseif a then
      tot, res, changed = tot + amt - c, 1, true
      if fin == '0' and amt == 0 then
        redis.call('HDEL', key, str(id))
        if a == last then relast = true end
      else
        redis.call('HSET', key, str(id), str(a) .. ':' .. str(amt) .. ':' .. fin)
      end
    end
  end
  out[#out + 1] = res
end
-- fit returns the earliest instant, no earlier than now and than from,
-- at which c more fits in the window given the events before id upto
-- (whose amount is held): walking from the oldest, those that must leave.
local function fit(c, held, from, upto)
  local at = math.max(now, from)
  local excess = held + c - L
  local j, acc = lo, 0
  while excess > 0 and acc < excess and j < upto do
    local a, ec = ev(j)
    j = j + 1
    if a and ec > 0 then
      acc = acc + ec
      if acc >= excess then at = math.max(at, a + W) end
    end
  end
  if excess > 0 and acc < excess then at = math.max(at, now + W) end
  return at
end

-- Moves: a reservation whose owner asks is admitted again against the
-- events before it, as if it had asked now, and moves to that instant if
-- it is earlier; never before the event before it, so that the events
-- stay in order of their instants. The windows that gain it hold only
-- the events before it; the ones that lose it only hold less.
for sep, id in string.gmatch(ARGV[6], '(%d+):(%d+)') do
  local res = 0
  id = tonumber(id)
  if tonumber(sep) == ep and id >= lo and id <= hi then
    local a, c, f = ev(id)
    if a and f == '0' and a > now then
      local prev, after = 0, 0
      for j = id - 1, lo, -1 do
        local pa = ev(j)
        if pa then prev = pa; break end
      end
      for j = id + 1, hi do
        local pa, pc = ev(j)
        if pa then after = after + pc end
      end
      local at = fit(c, tot - c - after, math.max(prev, hold), id)
      if at < a then
        redis.call('HSET', key, str(id), str(at) .. ':' .. str(c) .. ':0')
        res, changed, relast = at, true, true
      end
    end
  end
  out[#out + 1] = res
end

if relast then
  -- The latest event was given back, or moved: admissions need only
  -- follow the latest one left, where it is now.
  last = 0
  for id = hi, lo, -1 do
    local a = ev(id)
    if a then last = a; break end
  end
end

-- The events from the oldest on, as far as the requests so far needed to
-- look: instants and running amounts.
local wa, wc, wn, nxt = {}, {}, 0, lo
for c, mw in string.gmatch(ARGV[5], '(%d+):(%-?%d+)') do
  c, mw = tonumber(c), tonumber(mw)
  if c > L then
    out[#out + 1] = 0
  else
    local at = math.max(now, last, hold)
    local excess = tot + c - L
    if excess > 0 then
      -- The oldest events holding excess must leave first.
      while (wn == 0 or wc[wn] < excess) and nxt <= hi do
        local a, ec = ev(nxt)
        nxt = nxt + 1
        if a and ec > 0 then
          wn = wn + 1
          wa[wn], wc[wn] = a, ec + (wc[wn - 1] or 0)
        end
      end
      local i, j = 1, wn
      while i < j do
        local mid = math.floor((i + j) / 2)
        if wc[mid] >= excess then j = mid else i = mid + 1 end
      end
      if wn > 0 then at = math.max(at, wa[i] + W) else at = math.max(at, now + W) end
    end
    if mw >= 0 and at - now > mw then
      out[#out + 1] = math.min(now - at, -1)
    else
      hi = hi + 1
      redis.call('HSET', key, str(hi), str(at) .. ':' .. str(c) .. ':0')
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
