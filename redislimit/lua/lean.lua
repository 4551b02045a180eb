-- lean.lua: gcra.lua for one request and no give-back, what a lone caller
-- sends on the direct path, where the call is all the latency it sees. It
-- reads no list and makes no table; the limiter computes the cost's span
-- in Go. Time, the key's value and the reply are gcra.lua's (see its
-- top); the reply is gcra.lua's for one request: now, gave (always 0), the
-- request's code, then the key's value afterwards.
--
-- Its one argument packs nine little-endian float64s (integers below
-- 2^53): one string to make and one unpack, where nine arguments were
-- nine strings and nine conversions, a few µs of a lone call.
--
--   KEYS[1]  the limit's key
--   ARGV[1]  C: ticks per microsecond; tau: whole µs and the ticks beyond;
--            0 to read Redis TIME, or the instant in µs to decide at;
--            maxwait in µs, -1 for none; cost·P: whole µs and the ticks
--            beyond (cost <= burst); the floor, whole µs and ticks (0 0:
--            none), as gcra.lua's ARGV[10]
--
-- A refusal writes the key only if the floor raised its TAT. Arguments
-- that are not integers in range (NaN, infinities, 2^53 and beyond, a
-- negative span) are refused with an error: the script never decides on
-- them.
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local C, tauW, tauF, now, mw, iw, ifr, fw, ff = struct.unpack('<ddddddddd', ARGV[1])
local function int(x, lo) return x == x and x % 1 == 0 and x >= lo and x < 9007199254740992 end
if not (int(C, 1) and int(tauW, 0) and int(tauF, 0) and tauF < C and int(now, 0) and int(mw, -1)
    and int(iw, 0) and int(ifr, 0) and ifr < C) then
  return redis.error_reply('ERR sluice: the arguments are not integers in range')
end
-- now: Redis TIME as integer µs, unless the caller gave the instant.
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- The key's value: the TAT tw (whole µs) and tf (ticks), the write count
-- seq and the latest TAT top; cur is the value as read, packed ("" for no
-- key). The text form "W:F:N:M" of earlier releases is read as well and
-- answered packed. A value that is neither, or whose numbers are not
-- integers in range, is not the limiter's: the call fails rather than
-- decide on it. A TAT in the past is idle time, never banked: it reads as
-- now.
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

-- The floor (floor.go) raises the TAT; it is never beyond the TAT the key
-- would hold had nothing been lost, so on a key that kept its state it
-- changes nothing.
if not (fw >= 0 and fw < 9007199254740992 and fw % 1 == 0 and ff >= 0 and ff < C and ff % 1 == 0) then
  return redis.error_reply('ERR sluice: the floor is not an instant')
end
local raised = fw > tw or (fw == tw and ff > tf)
if raised then tw, tf = fw, ff end

-- The cost fits from the TAT plus its span, less tau, rounded up to
-- whole µs and no earlier than now.
local sw, sf = tw + iw - tauW, tf + ifr - tauF
if sf < 0 then sw, sf = sw - 1, sf + C elseif sf >= C then sw, sf = sw + 1, sf - C end
if sf > 0 then sw = sw + 1 end
local at = sw
if at < now then at = now end

-- write stores the key's new value (one more write, the latest TAT it
-- ever held) in cur and sets the key, expiring at that latest TAT.
local function write()
  local up = tw
  if tf > 0 then up = up + 1 end
  if up > top then top = up end
  seq = seq + 1
  cur = struct.pack('<dddd', tw, tf, seq, top)
  redis.call('SET', key, cur, 'PX', math.ceil((top - now) / 1000))
end

if mw >= 0 and at - now > mw then
  if raised then write() end
  return struct.pack('<ddd', now, 0, now - at) .. cur
end
tw, tf = tw + iw, tf + ifr
if tf >= C then tw, tf = tw + 1, tf - C end
write()
return struct.pack('<ddd', now, 0, at) .. cur
