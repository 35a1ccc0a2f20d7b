package bfcl

import (
	"strings"
	"testing"
)

// Test entries written in BFCL's formats: function documents as in the
// question files, ground truths as in possible_answer, and responses as the
// checker receives them after decoding ([{function: {param: value}}]). Each
// case names the checker rule its expected verdict follows from.

const weatherDoc = `{"name": "get_weather", "description": "Current weather for a city.", "parameters": {"type": "dict",
 "properties": {"city": {"type": "string", "description": "City name."}, "days": {"type": "integer", "description": "Forecast days."},
  "scale": {"type": "float", "description": "Scale factor."}, "detailed": {"type": "boolean", "description": "Hourly detail."},
  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit."}},
 "required": ["city", "days"]}}`

const tripDoc = `{"name": "plan_trip", "description": "Plan a trip.", "parameters": {"type": "dict",
 "properties": {"stops": {"type": "array", "items": {"type": "string"}, "description": "Cities in order."},
  "coords": {"type": "tuple", "items": {"type": "float"}, "description": "Start coordinates."},
  "prefs": {"type": "dict", "properties": {"seat": {"type": "string"}, "meal": {"type": "string"}}, "description": "Preferences."},
  "legs": {"type": "array", "items": {"type": "dict"}, "description": "Legs."},
  "counts": {"type": "array", "items": {"type": "integer"}, "description": "Travellers per leg."},
  "budget": {"type": "any", "description": "Budget."}},
 "required": ["stops"]}}`

const hotelDoc = `{"name": "book_hotel", "description": "Book a hotel.", "parameters": {"type": "dict",
 "properties": {"city": {"type": "string", "description": "City."}, "nights": {"type": "integer", "description": "Nights."}},
 "required": ["city"]}}`

const javaDoc = `{"name": "CacheManager.configure", "description": "Configure a cache.", "parameters": {"type": "dict",
 "properties": {"name": {"type": "String", "description": "Cache name."}, "size": {"type": "long", "description": "Max entries."},
  "ratio": {"type": "float", "description": "Load factor."}, "enabled": {"type": "boolean", "description": "On or off."},
  "tags": {"type": "ArrayList", "items": {"type": "String"}, "description": "Tags."},
  "keys": {"type": "Array", "items": {"type": "String"}, "description": "Keys."},
  "options": {"type": "HashMap", "description": "Options."}, "owner": {"type": "any", "description": "Owner object."}},
 "required": ["name", "size"]}}`

const jsDoc = `{"name": "renderChart", "description": "Render a chart.", "parameters": {"type": "dict",
 "properties": {"title": {"type": "String", "description": "Title."}, "points": {"type": "array", "items": {"type": "float"}, "description": "Values."},
  "labels": {"type": "array", "items": {"type": "String"}, "description": "Labels."}, "options": {"type": "dict", "description": "Options."},
  "count": {"type": "integer", "description": "Series count."}, "seed": {"type": "Bigint", "description": "Seed."},
  "animate": {"type": "Boolean", "description": "Animate."}},
 "required": ["title"]}}`

type checkCase struct {
	rule     string // the checker rule the verdict follows from
	category string
	fns, gt  string
	resp     string // decoded response; "" with undecodable
	undecod  bool   // the response did not decode
	want     string // the checker's error type; "" for valid
}

var weatherGT = `[{"get_weather": {"city": ["New York, NY", "NYC"], "days": [3], "scale": [1.5, ""], "detailed": ["", false], "unit": ["", "celsius"]}}]`

var checkCases = []checkCase{
	{rule: "simple: the gold call, every value acceptable", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 3}}]`},
	{rule: "strict types: an int parameter given a float (10.0) is a type error", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 3.0}}]`, want: "type_error:simple"},
	{rule: "strict types: an int parameter given a numeric string is a type error", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": "3"}}]`, want: "type_error:simple"},
	{rule: "strict types: a bool is not an int", category: "simple_python", fns: "[" + weatherDoc + "]", gt: `[{"get_weather": {"city": ["NYC"], "days": [1]}}]`,
		resp: `[{"get_weather": {"city": "NYC", "days": true}}]`, want: "type_error:simple"},
	{rule: "strict types: an int is promoted to float for a float parameter", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": [3], "scale": [2.0]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": 3, "scale": 2}}]`},
	{rule: "strict types: a float is not promoted or truncated for an int parameter", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": [3], "scale": [2.0]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": 3, "scale": "2.0"}}]`, want: "type_error:simple"},
	{rule: "standardize_string: spaces and ,./-_*^ removed, case ignored", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "new-york ny.", "days": 3}}]`},
	{rule: "standardize_string: ' and \" are the same", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["O'Hare"], "days": [3]}}]`, resp: `[{"get_weather": {"city": "o\"hare", "days": 3}}]`},
	{rule: "standardize_string: other differences fail as value_error:string", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "New York City", "days": 3}}]`, want: "value_error:string"},
	{rule: "optional \"\": a parameter whose values hold \"\" may be left out", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 3, "unit": "Celsius"}}]`},
	{rule: "optional \"\": a gold parameter without \"\" must be given (missing_optional)", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": [3], "unit": ["celsius"]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": 3}}]`,
		want: "simple_function_checker:missing_optional"},
	{rule: "required parameters of the document must be present", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC"}}]`, want: "simple_function_checker:missing_required"},
	{rule: "an argument the document does not declare is unexpected", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 3, "lang": "en"}}]`, want: "simple_function_checker:unexpected_param"},
	{rule: "a declared argument the gold answer does not name is unexpected", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": [3]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": 3, "detailed": false}}]`,
		want: "simple_function_checker:unexpected_param"},
	{rule: "simple: the name must be the first function's", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_forecast": {"city": "NYC", "days": 3}}]`, want: "simple_function_checker:wrong_func_name"},
	{rule: "simple: exactly one call", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 3}}, {"get_weather": {"city": "NYC", "days": 3}}]`, want: "simple_function_checker:wrong_count"},
	{rule: "simple: no call at all is the wrong count", category: "live_simple", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[]`, want: "simple_function_checker:wrong_count"},
	{rule: "variable: gold values of another type than declared are matched exactly, unstandardized", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": ["num_days"]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": "num_days"}}]`},
	{rule: "variable: no standardization for a variable", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": ["num_days"]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": "Num_Days"}}]`,
		want: "value_error:others"},
	{rule: "values of other types compare by Python equality (3 == 3.0)", category: "simple_python", fns: "[" + weatherDoc + "]",
		gt: `[{"get_weather": {"city": ["NYC"], "days": [3.0]}}]`, resp: `[{"get_weather": {"city": "NYC", "days": 3}}]`},
	{rule: "values of other types: not among the gold values", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		resp: `[{"get_weather": {"city": "NYC", "days": 4}}]`, want: "value_error:others"},
	{rule: "lists: string elements standardized, order kept", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["New York", "Los Angeles"], ["NYC", "LA"]]}}]`, resp: `[{"plan_trip": {"stops": ["new york", "LOS-ANGELES"]}}]`},
	{rule: "lists: another order is another list", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC", "LA"]]}}]`, resp: `[{"plan_trip": {"stops": ["LA", "NYC"]}}]`, want: "value_error:list/tuple"},
	{rule: "lists: element types are checked (one level)", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "counts": [[1, 2]]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "counts": [1, 2.0]}}]`, want: "type_error:nested"},
	{rule: "lists: an optional \"\" gold value equals the empty list", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "counts": ["", [1]]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "counts": []}}]`},
	{rule: "tuple: a tuple parameter takes a list (JSON has no tuples)", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "coords": [[40.7, -74.0]]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "coords": [40.7, -74.0]}}]`},
	{rule: "tuple: element types are strict (no int→float inside)", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "coords": [[40.0, -74.0]]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "coords": [40, -74.0]}}]`, want: "type_error:nested"},
	{rule: "dicts: keys checked against per-key options, strings standardized, optional keys", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "prefs": [{"seat": ["window", "aisle"], "meal": ["", "vegan"]}]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "prefs": {"seat": "Window"}}}]`},
	{rule: "dicts: a key outside the gold dict", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "prefs": [{"seat": ["window"]}]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "prefs": {"seat": "window", "meal": "vegan"}}}]`, want: "value_error:dict_key"},
	{rule: "dicts: a gold key without \"\" left out", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "prefs": [{"seat": ["window"], "meal": ["vegan"]}]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "prefs": {"seat": "window"}}}]`, want: "value_error:dict_key"},
	{rule: "dicts: a value outside its options", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "prefs": [{"seat": ["window"]}]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "prefs": {"seat": "aisle"}}}]`, want: "value_error:dict_value"},
	{rule: "lists of dicts: position by position", category: "simple_python", fns: "[" + tripDoc + "]",
		gt:   `[{"plan_trip": {"stops": [["NYC"]], "legs": [[{"from": ["NYC"], "to": ["LA"]}, {"from": ["LA"], "to": ["SF"]}]]}}]`,
		resp: `[{"plan_trip": {"stops": ["NYC"], "legs": [{"from": "nyc", "to": "LA"}, {"from": "LA", "to": "sf"}]}}]`},
	{rule: "lists of dicts: the number of dicts must match", category: "simple_python", fns: "[" + tripDoc + "]",
		gt:   `[{"plan_trip": {"stops": [["NYC"]], "legs": [[{"from": ["NYC"], "to": ["LA"]}]]}}]`,
		resp: `[{"plan_trip": {"stops": ["NYC"], "legs": [{"from": "NYC", "to": "LA"}, {"from": "LA", "to": "SF"}]}}]`, want: "value_error:list_dict_count"},
	{rule: "any: a string, standardized", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "budget": ["$1,000"]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "budget": "$1000"}}]`},
	{rule: "greedy first fit (parallel): every gold call takes the first unused call that passes, in any order", category: "parallel",
		fns: "[" + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"], "nights": [2]}}, {"book_hotel": {"city": ["Rome"], "nights": [3]}}]`,
		resp: `[{"book_hotel": {"city": "Rome", "nights": 3}}, {"book_hotel": {"city": "Paris", "nights": 2}}]`},
	{rule: "greedy first fit (parallel): an early call taken by the first gold call is not given back", category: "parallel",
		fns: "[" + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"], "nights": ["", 2]}}, {"book_hotel": {"city": ["Paris"], "nights": [2]}}]`,
		resp: `[{"book_hotel": {"city": "Paris", "nights": 2}}, {"book_hotel": {"city": "Paris"}}]`, want: "parallel_function_checker_no_order:cannot_find_match"},
	{rule: "parallel: as many calls as gold calls", category: "live_parallel",
		fns: "[" + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"]}}, {"book_hotel": {"city": ["Rome"]}}]`,
		resp: `[{"book_hotel": {"city": "Paris"}}]`, want: "parallel_function_checker_no_order:wrong_count"},
	{rule: "parallel multiple: each gold call is checked against its own function's document", category: "parallel_multiple",
		fns: "[" + weatherDoc + ", " + hotelDoc + "]", gt: `[{"get_weather": {"city": ["Paris"], "days": [1]}}, {"book_hotel": {"city": ["Paris"], "nights": [2]}}]`,
		resp: `[{"book_hotel": {"city": "paris", "nights": 2}}, {"get_weather": {"city": "Paris", "days": 1}}]`},
	{rule: "multiple: only the first call is checked, against the gold function", category: "multiple",
		fns: "[" + weatherDoc + ", " + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"], "nights": [2]}}]`,
		resp: `[{"get_weather": {"city": "Paris", "days": 2}}]`, want: "simple_function_checker:wrong_func_name"},
	{rule: "multiple: the gold function found by name among several", category: "live_multiple",
		fns: "[" + weatherDoc + ", " + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"], "nights": [2]}}]`,
		resp: `[{"book_hotel": {"city": "Paris", "nights": 2}}]`},
	{rule: "multiple: as many calls as gold calls", category: "multiple",
		fns: "[" + weatherDoc + ", " + hotelDoc + "]", gt: `[{"book_hotel": {"city": ["Paris"]}}]`,
		resp: `[{"book_hotel": {"city": "Paris"}}, {"get_weather": {"city": "Paris", "days": 2}}]`, want: "multiple_function_checker:wrong_count"},
	{rule: "decoding: a response that does not decode fails an AST category", category: "simple_python", fns: "[" + weatherDoc + "]", gt: weatherGT,
		undecod: true, want: "ast_decoder:decoder_failed"},
	{rule: "irrelevance by decode success: no call passes", category: "irrelevance", fns: "[" + weatherDoc + "]", resp: `[]`},
	{rule: "irrelevance by decode success: an undecodable response is no call", category: "live_irrelevance", fns: "[" + weatherDoc + "]", undecod: true},
	{rule: "irrelevance by decode success: any call fails", category: "irrelevance", fns: "[" + weatherDoc + "]",
		resp: `[{"get_weather": {}}]`, want: "irrelevance_error:decoder_success"},
	{rule: "relevance by decode success: any call passes, right or wrong", category: "live_relevance", fns: "[" + weatherDoc + "]",
		resp: `[{"get_weather": {"city": 12}}]`},
	{rule: "relevance by decode success: no call fails", category: "live_relevance", fns: "[" + weatherDoc + "]",
		resp: `[]`, want: "relevance_error:decoder_failed"},
	{rule: "Java: a long literal with its L suffix converts to an int", category: "simple_java", fns: "[" + javaDoc + "]",
		gt: `[{"CacheManager.configure": {"name": ["users"], "size": [5000], "enabled": [true]}}]`, resp: `[{"CacheManager.configure": {"name": "users", "size": "5000L", "enabled": "true"}}]`},
	{rule: "Java: a long without L stays text, so its type is wrong", category: "simple_java", fns: "[" + javaDoc + "]",
		gt: `[{"CacheManager.configure": {"name": ["users"], "size": [5000]}}]`, resp: `[{"CacheManager.configure": {"name": "users", "size": "5000"}}]`, want: "type_error:simple"},
	{rule: "Java: every argument must be a string", category: "simple_java", fns: "[" + javaDoc + "]",
		gt: `[{"CacheManager.configure": {"name": ["users"], "size": [5000]}}]`, resp: `[{"CacheManager.configure": {"name": "users", "size": 5000}}]`, want: "type_error:java"},
	{rule: "Java: a float needs its f suffix", category: "simple_java", fns: "[" + javaDoc + "]",
		gt: `[{"CacheManager.configure": {"name": ["users"], "size": [1], "ratio": [0.75]}}]`, resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "ratio": "0.75f"}}]`},
	{rule: "Java: an ArrayList of String drops each element's quotes", category: "simple_java", fns: "[" + javaDoc + "]",
		gt:   `[{"CacheManager.configure": {"name": ["users"], "size": [1], "tags": [["hot", "eu"]]}}]`,
		resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "tags": "new ArrayList<>(Arrays.asList(\"hot\", \"eu\"))"}}]`},
	{rule: "Java: an Array of String keeps each element's quotes, so quoted elements never match", category: "simple_java", fns: "[" + javaDoc + "]",
		gt:   `[{"CacheManager.configure": {"name": ["users"], "size": [1], "keys": [["id"]]}}]`,
		resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "keys": "new String[]{\"id\"}"}}]`, want: "value_error:list/tuple"},
	{rule: "Java: an Array of String written without quotes", category: "simple_java", fns: "[" + javaDoc + "]",
		gt:   `[{"CacheManager.configure": {"name": ["users"], "size": [1], "keys": [["id"]]}}]`,
		resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "keys": "new String[]{id}"}}]`},
	{rule: "Java: a HashMap literal becomes a dict for the dict check", category: "simple_java", fns: "[" + javaDoc + "]",
		gt:   `[{"CacheManager.configure": {"name": ["users"], "size": [1], "options": [{"mode": ["lru"], "shards": [4]}]}}]`,
		resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "options": "new HashMap<String, Object>() {{ put(\"mode\", \"LRU\"); put(\"shards\", 4); }}"}}]`},
	{rule: "Java: a variable name for a HashMap parameter", category: "simple_java", fns: "[" + javaDoc + "]",
		gt:   `[{"CacheManager.configure": {"name": ["users"], "size": [1], "options": ["cacheOptions"]}}]`,
		resp: `[{"CacheManager.configure": {"name": "users", "size": "1L", "options": "cacheOptions"}}]`},
	{rule: "JavaScript: a quoted String loses its quotes; any is text", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["Sales 2024"], "animate": ["", true]}}]`, resp: `[{"renderChart": {"title": "'sales-2024'", "animate": "true"}}]`},
	{rule: "JavaScript: array elements converted to the element type", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["T"], "points": [[1.0, 2.5]], "labels": [["Q1", "Q2"]]}}]`, resp: `[{"renderChart": {"title": "T", "points": "[1, 2.5]", "labels": "['q1', \"Q2\"]"}}]`},
	{rule: "JavaScript: an object literal becomes a dict", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["T"], "options": [{"type": ["bar"], "stacked": [true]}]}}]`, resp: `[{"renderChart": {"title": "T", "options": "{type: 'bar', stacked: true}"}}]`},
	{rule: "JavaScript: a Bigint literal with n", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["T"], "seed": [42]}}]`, resp: `[{"renderChart": {"title": "T", "seed": "42n"}}]`},
	{rule: "JavaScript: an integer literal with a fraction stays text", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["T"], "count": [3]}}]`, resp: `[{"renderChart": {"title": "T", "count": "3.0"}}]`, want: "type_error:simple"},
	{rule: "JavaScript: every argument must be a string", category: "simple_javascript", fns: "[" + jsDoc + "]",
		gt: `[{"renderChart": {"title": ["T"], "count": [3]}}]`, resp: `[{"renderChart": {"title": "T", "count": 3}}]`, want: "type_error:js"},
	// parallel_multiple_12's quirk: the gold names "permeability", which its
	// function does not declare, with "" among its values.
	{rule: "quirk (undeclared gold parameter with \"\"): a call without it passes", category: "parallel_multiple",
		fns: "[" + hotelDoc + ", " + weatherDoc + "]", gt: `[{"get_weather": {"city": ["Oslo"], "days": [2], "permeability": ["", 0.1]}}, {"book_hotel": {"city": ["Oslo"]}}]`,
		resp: `[{"get_weather": {"city": "Oslo", "days": 2}}, {"book_hotel": {"city": "Oslo"}}]`},
	{rule: "quirk (undeclared gold parameter with \"\"): giving it is unexpected, so no call matches", category: "parallel_multiple",
		fns: "[" + hotelDoc + ", " + weatherDoc + "]", gt: `[{"get_weather": {"city": ["Oslo"], "days": [2], "permeability": ["", 0.1]}}, {"book_hotel": {"city": ["Oslo"]}}]`,
		resp: `[{"get_weather": {"city": "Oslo", "days": 2, "permeability": 0.1}}, {"book_hotel": {"city": "Oslo"}}]`, want: "parallel_function_checker_no_order:cannot_find_match"},
	// live_simple_106-63-0's quirk: an empty list of acceptable values.
	{rule: "quirk (empty acceptable list, required): leaving it out misses a required parameter", category: "live_simple", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": []}}]`, resp: `[{"plan_trip": {}}]`, want: "simple_function_checker:missing_required"},
	{rule: "quirk (empty acceptable list): no value has an acceptable type", category: "live_simple", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": []}}]`, resp: `[{"plan_trip": {"stops": ["NYC"]}}]`, want: "type_error:simple"},
	{rule: "quirk (empty acceptable list, optional): leaving it out is not allowed either", category: "live_simple", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "counts": []}}]`, resp: `[{"plan_trip": {"stops": ["NYC"]}}]`, want: "simple_function_checker:missing_optional"},
	{rule: "the checker raises (dict gold value that is a number): checker_error", category: "simple_python", fns: "[" + tripDoc + "]",
		gt: `[{"plan_trip": {"stops": [["NYC"]], "prefs": [{"seat": 3}]}}]`, resp: `[{"plan_trip": {"stops": ["NYC"], "prefs": {"seat": "x"}}}]`, want: "checker_error:TypeError"},
}

// decodeResponse turns [{name: {param: value}}] into calls.
func decodeResponse(t *testing.T, s string) []Call {
	t.Helper()
	v, err := DecodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("response %s: %v", s, err)
	}
	var calls []Call
	for _, c := range v.([]Value) {
		d := c.(*Dict)
		calls = append(calls, Call{Name: d.Keys[0], Args: d.Vals[d.Keys[0]].(*Dict)})
	}
	return calls
}

func runCase(t *testing.T, c checkCase) Result {
	t.Helper()
	var gt []byte
	if c.gt != "" {
		gt = []byte(c.gt)
	}
	cs, err := ParseCase(c.category, []byte(c.fns), gt)
	if err != nil {
		t.Fatalf("%s: ParseCase: %v", c.rule, err)
	}
	var calls []Call
	if !c.undecod {
		calls = decodeResponse(t, c.resp)
	}
	return cs.Check(!c.undecod, calls)
}

func TestCheckRules(t *testing.T) {
	for _, c := range checkCases {
		r := runCase(t, c)
		if r.Valid != (c.want == "") || r.ErrorType != c.want {
			t.Errorf("%s [%s]\n response %s\n got valid=%v %q (%s), want %q", c.rule, c.category, c.resp, r.Valid, r.ErrorType, r.Error, c.want)
		}
	}
}

func TestParseCaseErrors(t *testing.T) {
	for _, tc := range []struct{ cat, fns, gt, want string }{
		{"simple_python", `{"name": "f"}`, `[{"f": {}}]`, "must be a list"},
		{"simple_python", `[{"name": "f", "parameters": {"type": "dict", "properties": {}}}]`, `[{"f": {}}]`, "required"},
		{"simple_python", "[" + weatherDoc + "]", ``, "no ground truth"},
		{"simple_python", "[" + weatherDoc + "]", `[{"get_weather": {"city": "NYC"}}]`, "list of acceptable values"},
		{"multiple", "[" + weatherDoc + "]", `[{"book_hotel": {"city": ["NYC"]}}]`, "not in the function list"},
		{"", "[]", `[]`, "empty category"},
		{"simple_python", `[`, `[]`, "functions"},
	} {
		var gt []byte
		if tc.gt != "" {
			gt = []byte(tc.gt)
		}
		_, err := ParseCase(tc.cat, []byte(tc.fns), gt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCase(%s, %s, %s) = %v, want an error with %q", tc.cat, tc.fns, tc.gt, err, tc.want)
		}
	}
	// The relevance categories need no answers and check no documents.
	if _, err := ParseCase("live_relevance", []byte(`[{"name": "f"}]`), nil); err != nil {
		t.Errorf("live_relevance: %v", err)
	}
}
