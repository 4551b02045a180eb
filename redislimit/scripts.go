package redislimit

import (
	"crypto/sha1"
	"encoding/hex"
)

// batchScript is GCRA for a batch of requests against one key, in order,
// at one instant. It is the only script the limiter runs: every decision,
// reservation and give-back is one call of it.
//
// Time is integer microseconds since the Unix epoch, read once from Redis
// TIME. Lua numbers are doubles, exact for integers below 2^53 (about 285
// years of microseconds since 1970); the limiter checks at construction
// that every quantity the script forms stays below that. Durations finer
// than a microsecond (one unit of 3/s lasts 333333⅓ µs) are kept exact as
// a pair: whole microseconds and ticks of 1/C µs, 0 <= ticks < C.
//
// The key holds W, F, N and M, four little-endian float64s (32 bytes,
// struct.pack('<dddd'); every one an integer below 2^53, which a double
// holds exactly): the theoretical arrival time (TAT) as whole µs W and
// ticks F; N, a count of the script's writes to the key, so that two
// values are equal only if nothing was written in between (a give-back
// checks it); and M, the latest TAT the key ever held, rounded up to the
// µs. Binary rather than text because reading and writing it is then
// about a tenth of the script's Lua work instead of most of it (a pattern
// match, four conversions and a format). The key expires at M (PX,
// rounded up to the millisecond): that is the TAT itself, its reset time,
// unless a give-back moved the TAT back. From then on a missing key and
// the stored TAT decide alike, and a key made afresh starts beyond every
// value the old one held, so no value ever repeats.
//
// Its keys and arguments:
//
//	KEYS[1]  the limit's key
//	ARGV[1]  P: ticks one unit of cost occupies (the emission interval)
//	ARGV[2]  C: ticks per microsecond
//	ARGV[3]  tau = burst·P ticks, how far the TAT may run ahead: whole µs
//	ARGV[4]  tau: the ticks beyond ARGV[3]
//	ARGV[5]  "0" to read Redis TIME, or the instant in µs to decide at
//	         instead (tests that drive time themselves)
//	ARGV[6]  give-back: W, F and N as the key holds them (its first 24
//	         bytes), the value it must still hold, or "" for none
//	ARGV[7]  give-back: whole µs to move the TAT back (never before now)
//	ARGV[8]  give-back: the ticks beyond ARGV[7]
//	ARGV[9]  the requests, in order: "cost:maxwait,cost:maxwait:n,...", with
//	         maxwait in µs, -1 for none (0: granted now or not at all), and
//	         n, if given, the number of requests in a row that are alike
//	         (a pool's workers asking for one unit each send one entry)
//	ARGV[10] optional: the caller's floor for the TAT, W and F as two
//	         little-endian float64s (16 bytes), or "" for none: the end of
//	         the latest admission the calling process holds (floor.go).
//	         The TAT is raised to it before anything else is decided, so
//	         that a key Redis lost (FLUSHALL, a restart without
//	         persistence, an eviction, a failover to a replica that lagged)
//	         is never behind what this process was given
//	ARGV[11] optional, with a give-back: the call's id, unique among the
//	         calling limiter's (replay.go)
//	ARGV[12] with ARGV[11]: how long to keep the reply, in ms
//	KEYS[2]  with ARGV[11]: the calling limiter's replay key, in KEYS[1]'s
//	         slot. A run that finds "id:" and a reply there answers that
//	         reply and changes nothing: it is go-redis sending the call
//	         again after its reply was lost. Otherwise the reply is kept
//	         there, after "id:", for ARGV[12] ms.
//
// The reply is one string of little-endian float64s (every one an integer
// of magnitude below 2^53): now, the instant decided at; gave, 1 if the
// give-back moved the TAT back; then for each request its code: its
// admission instant in µs, rounded up (now for granted now, later for a
// reservation: the TAT moves on either way); -wait (wait >= 1 µs, the time
// until it would be admitted) for one refused because that is beyond its
// maxwait; 0 for a cost that can never be admitted (above the burst; the
// limiter never sends one). Last comes the key's value afterwards (32
// bytes; none when there is no key). A packed string and run-length
// entries rather than an array and one entry per request: at a few dozen
// requests a call, parsing the list and replying with one integer per
// request were most of the script's time.
const batchScript = `
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local P, C = tonumber(ARGV[1]), tonumber(ARGV[2])
local tauW, tauF = tonumber(ARGV[3]), tonumber(ARGV[4])
local now = tonumber(ARGV[5])
local id = ARGV[11]
if id then
  id = id .. ':'
  local kept = redis.call('GET', KEYS[2])
  if kept and string.sub(kept, 1, #id) == id then return string.sub(kept, #id + 1) end
end
` + luaNow + `
-- a / b for integers below 2^53: the float quotient may round, so correct it.
local function divmod(a, b)
  local q = math.floor(a / b)
  local r = a - q * b
  if r < 0 then q, r = q - 1, r + b elseif r >= b then q, r = q + 1, r - b end
  return q, r
end

` + luaReadTAT + `
local fw, ff = 0, 0
local floor = ARGV[10]
if floor and floor ~= '' then
  if #floor ~= 16 then return redis.error_reply('ERR sluice: the floor is not 16 bytes') end
  fw, ff = struct.unpack('<dd', floor)
end
` + luaFloor + `
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
  local ci = inc[c]
  if not ci then ci = {divmod(c * P, C)}; inc[c] = ci end
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
` + luaFitAt + `
      if mw >= 0 and at - now > mw then
        out[k] = now - at
      else
` + luaAdvance + `
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
` + luaWriteTAT + `
end
flush()
parts[#parts + 1] = cur
local reply = table.concat(parts)
if id then redis.call('SET', KEYS[2], id .. reply, 'PX', tonumber(ARGV[12])) end
return reply
`

// batchSHA is the SHA1 that EVALSHA names batchScript by.
var batchSHA = scriptSHA(batchScript)

// scriptSHA is the SHA1 that EVALSHA names a script by.
func scriptSHA(script string) string {
	h := sha1.Sum([]byte(script))
	return hex.EncodeToString(h[:])
}

// leanScript is batchScript for one request and no give-back: what a lone
// caller sends on the direct path, where the call is all the latency it
// sees. It reads no list and makes no table; the limiter computes the
// cost's span in Go. Its reply is batchScript's for one request: now,
// gave (always 0), the request's code, then the key's value afterwards.
//
// Its one argument packs nine little-endian float64s (integers): one
// string to make and one unpack, where nine arguments were nine strings
// and nine conversions, a few µs of a lone call.
//
//	KEYS[1]  the limit's key
//	ARGV[1]  C: ticks per microsecond; tau: whole µs and the ticks beyond;
//	         0 to read Redis TIME, or the instant in µs to decide at;
//	         maxwait in µs, -1 for none; cost·P: whole µs and the ticks
//	         beyond (cost <= burst); the floor, whole µs and ticks (0 0:
//	         none), as batchScript's ARGV[10]
//
// A refusal writes the key only if the floor raised its TAT.
const leanScript = `
if redis.replicate_commands then redis.replicate_commands() end
local key = KEYS[1]
local C, tauW, tauF, now, mw, iw, ifr, fw, ff = struct.unpack('<ddddddddd', ARGV[1])
` + luaNow + `
` + luaReadTAT + luaFloor + luaFitAt + `
if mw >= 0 and at - now > mw then
  if raised then
` + luaWriteTAT + `  end
  return struct.pack('<ddd', now, 0, now - at) .. cur
end
` + luaAdvance + luaWriteTAT + `return struct.pack('<ddd', now, 0, at) .. cur
`

// leanSHA is the SHA1 that EVALSHA names leanScript by.
var leanSHA = scriptSHA(leanScript)

// The scripts' common parts. luaNow reads Redis TIME into now, as integer
// µs, unless the caller gave the instant (tests that drive time).
const luaNow = `if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
`

// luaReadTAT reads a GCRA key's value into the TAT tw (whole µs) and tf
// (ticks), the write count seq and the latest TAT top; cur is the value as
// read, packed ("" for no key). A value in the text form "W:F:N:M" that
// earlier releases wrote is read as well and answered packed, so that a
// deploy finds its keys as they were (the next write stores them packed).
// A value that is neither, or whose numbers are not integers in range, is
// not the limiter's: the call fails rather than decide on it. A TAT in the
// past is idle time, which is never banked: it reads as now.
const luaReadTAT = `local cur = redis.call('GET', key)
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
`

// luaFloor raises the TAT tw, tf to the caller's floor fw, ff (0 0: none)
// and says in raised whether it did. The floor is the end of an admission
// Redis made for the caller, so it is never beyond the TAT the key would
// hold had nothing been lost (floor.go): on a key that kept its state it
// changes nothing. A floor that is not an instant in range is not the
// limiter's: the call fails rather than decide on it.
const luaFloor = `if not (fw >= 0 and fw < 9007199254740992 and fw % 1 == 0 and ff >= 0 and ff < C and ff % 1 == 0) then
  return redis.error_reply('ERR sluice: the floor is not an instant')
end
local raised = fw > tw or (fw == tw and ff > tf)
if raised then tw, tf = fw, ff end
`

// luaFitAt is the instant at, in whole µs rounded up and no earlier than
// now, from which a cost whose span is iw µs and ifr ticks fits: the TAT
// plus the span, less tau. (A comparison rather than math.max, a lookup of
// two globals and a call: this runs once per request, and a batch of 55
// spends a third less time in the loop.)
const luaFitAt = `local sw, sf = tw + iw - tauW, tf + ifr - tauF
if sf < 0 then sw, sf = sw - 1, sf + C elseif sf >= C then sw, sf = sw + 1, sf - C end
if sf > 0 then sw = sw + 1 end
local at = sw
if at < now then at = now end
`

// luaAdvance moves the TAT on by the span iw, ifr of an admission.
const luaAdvance = `tw, tf = tw + iw, tf + ifr
if tf >= C then tw, tf = tw + 1, tf - C end
`

// luaWriteTAT writes the key's new value (one more write, the latest TAT
// it ever held) into cur and sets the key, expiring at that latest TAT.
const luaWriteTAT = `local up = tw
if tf > 0 then up = up + 1 end
if up > top then top = up end
seq = seq + 1
cur = struct.pack('<dddd', tw, tf, seq, top)
redis.call('SET', key, cur, 'PX', math.ceil((top - now) / 1000))
`
