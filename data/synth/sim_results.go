package synth

// The simulated result of each API (see sim.go). rng is seeded by the
// episode seed and the normalized call, so everything drawn here is a pure
// function of them.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// code is a confirmation code: prefix, "-", six letters or digits.
func code(prefix string, rng *rand.Rand) string {
	b := []byte(prefix + "-")
	for range 6 {
		b = append(b, codeAlphabet[rng.IntN(len(codeAlphabet))])
	}
	return string(b)
}

// clock is a time of day in [from, to) hours, on quarter hours.
func clock(rng *rand.Rand, from, to int) string {
	q := rng.IntN((to - from) * 4)
	return fmt.Sprintf("%02d:%02d", from+q/4, 15*(q%4))
}

// distinct draws n distinct indices of [0, m), in draw order.
func distinct(rng *rand.Rand, n, m int) []int {
	return rng.Perm(m)[:min(n, m)]
}

// words returns n distinct entries of a lexicon category in the episode's
// language.
func (s *Sim) words(rng *rand.Rand, cat string, n int) []string {
	es, _ := builtin.category(cat)
	var out []string
	for _, i := range distinct(rng, n, len(es)) {
		out = append(out, es[i].T[s.li])
	}
	return out
}

// pool returns n distinct identifiers of a pool.
func pool(rng *rand.Rand, name string, n int) []string {
	ids := builtin.ids[name]
	var out []string
	for _, i := range distinct(rng, n, len(ids)) {
		out = append(out, ids[i])
	}
	return out
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }

func (s *Sim) result(api *API, v map[string]simVal, rng *rand.Rand) obj {
	str := func(k string) string { return v[k].s }
	num := func(k string) float64 { return v[k].n }
	switch api.Name {
	case "find_restaurants":
		names := pool(rng, "restaurant", 3)
		ratings := distinct(rng, len(names), 15) // 3.5 .. 4.9
		sort.Sort(sort.Reverse(sort.IntSlice(ratings)))
		var list []obj
		for i, n := range names {
			price := int(num("max_price")) - rng.IntN(max(1, int(num("max_price"))/2))
			list = append(list, obj{{"restaurant", n}, {"rating", round1(3.5 + float64(ratings[i])/10)}, {"price", max(price, 1)}})
		}
		return obj{{"restaurants", list}}
	case "reserve_table":
		t := str("time")
		if rng.IntN(2) == 0 { // the requested slot is taken: the next quarter hour
			t = laterBy(t, 15*(1+rng.IntN(2)))
		}
		return obj{{"status", "confirmed"}, {"confirmation", code("RT", rng)}, {"restaurant", str("restaurant")}, {"date", str("date")}, {"time", t}}
	case "search_flights":
		air := builtin.ids["airline"]
		prices := distinct(rng, 3, 40)
		sort.Ints(prices)
		var list []obj
		for _, p := range prices {
			fn := air[rng.IntN(len(air))] + fmt.Sprint(100+rng.IntN(9900))
			list = append(list, obj{{"flight_number", fn}, {"departure", clock(rng, 6, 22)}, {"price", 60 + 10*p}})
		}
		return obj{{"flights", list}}
	case "check_flight_status":
		status := []string{"on time", "delayed", "boarding"}[rng.IntN(3)]
		gate := fmt.Sprintf("%c%d", 'A'+rune(rng.IntN(6)), 1+rng.IntN(40))
		return obj{{"flight_number", str("flight_number")}, {"date", str("date")}, {"status", status}, {"gate", gate}, {"departure", clock(rng, 6, 22)}}
	case "find_free_slot":
		slots := distinct(rng, 3, 9*4) // quarter hours from 08:00 to 17:00
		sort.Ints(slots)
		var out []string
		for _, q := range slots {
			out = append(out, fmt.Sprintf("%02d:%02d", 8+q/4, 15*(q%4)))
		}
		return obj{{"date", str("date")}, {"slots", out}}
	case "list_events":
		titles := s.words(rng, "event", 2+rng.IntN(2))
		times := distinct(rng, len(titles), 12*4)
		sort.Ints(times)
		var list []obj
		for i, t := range titles {
			list = append(list, obj{{"title", t}, {"time", fmt.Sprintf("%02d:%02d", 8+times[i]/4, 15*(times[i]%4))}})
		}
		return obj{{"date", str("date")}, {"events", list}}
	case "search_files":
		var list []obj
		for _, p := range pool(rng, "path", 2) {
			list = append(list, obj{{"path", p}, {"size_kb", 10 + rng.IntN(5000)}})
		}
		return obj{{"files", list}}
	case "share_file":
		return obj{{"status", "shared"}, {"link", "https://share.example/" + strings.ToLower(code("f", rng)[2:])}}
	case "convert_currency":
		rate := 0.5 + rng.Float64()*1.5
		return obj{{"amount", num("amount")}, {"from", str("from_currency")}, {"to", str("to_currency")},
			{"rate", math.Round(rate*1e4) / 1e4}, {"converted", int(math.Round(num("amount") * rate))}}
	case "get_exchange_rate":
		return obj{{"base", str("base")}, {"target", str("target")}, {"rate", math.Round((0.5+rng.Float64()*1.5)*1e4) / 1e4}}
	case "check_balance":
		return obj{{"account", str("account")}, {"balance", 100 + rng.IntN(9900)}}
	case "send_money":
		return obj{{"status", "sent"}, {"transaction", code("TX", rng)}, {"amount", num("amount")}}
	case "get_recipe":
		items := s.words(rng, "grocery", 3)
		var list []obj
		for _, it := range items {
			list = append(list, obj{{"item", it}, {"quantity", 1 + rng.IntN(4)}})
		}
		return obj{{"dish", str("dish")}, {"ingredients", list}}
	case "find_nearby":
		names := s.words(rng, "place", 2)
		d := []float64{round1(0.2 + rng.Float64()), round1(1.3 + 2*rng.Float64())}
		var list []obj
		for i, n := range names {
			list = append(list, obj{{"name", n}, {"distance_km", d[i]}})
		}
		return obj{{"places", list}}
	case "book_taxi":
		return obj{{"status", "booked"}, {"booking", code("TB", rng)}, {"eta_minutes", 3 + rng.IntN(15)}}
	case "create_event":
		return obj{{"status", "created"}, {"event_id", code("EV", rng)}}
	case "get_weather":
		return obj{{"city", str("city")}, {"temperature", rng.IntN(35) - 5}, {"condition", []string{"sunny", "cloudy", "rain", "snow", "windy"}[rng.IntN(5)]}}
	case "get_forecast":
		var days []obj
		for d := 1; d <= min(int(num("days")), 3); d++ {
			lo := rng.IntN(20) - 5
			days = append(days, obj{{"day", d}, {"low", lo}, {"high", lo + 3 + rng.IntN(10)}})
		}
		return obj{{"city", str("city")}, {"days", days}}
	case "get_train_times":
		var list []string
		for _, q := range distinct(rng, 2, 14*4) {
			list = append(list, fmt.Sprintf("%02d:%02d", 6+q/4, 15*(q%4)))
		}
		sort.Strings(list)
		return obj{{"departures", list}}
	case "translate_text":
		return obj{{"translation", "[" + str("target_language") + "] " + str("text")}}
	}
	if effectAPIs[api.Name] {
		return obj{{"status", "done"}, {"id", code(strings.ToUpper(api.Name[:2]), rng)}}
	}
	return obj{{"results", 1 + rng.IntN(9)}, {"top", "https://example.com/" + strings.ToLower(code("r", rng)[2:])}}
}

// laterBy adds minutes to an HH:MM time (wrapping at midnight); a
// malformed time is returned unchanged.
func laterBy(t string, minutes int) string {
	var h, m int
	if _, err := fmt.Sscanf(t, "%d:%d", &h, &m); err != nil || h < 0 || h > 23 || m < 0 || m > 59 {
		return t
	}
	x := (h*60 + m + minutes) % (24 * 60)
	return fmt.Sprintf("%02d:%02d", x/60, x%60)
}
