package bfclsim

// MathAPI: what each function of BFCL's math_api returns, for the
// arguments its document declares. Errors are the messages BFCL's class
// gives for the same cases (an empty list, division by zero, a negative
// square root, an unknown unit).

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

type mathFunc func(args map[string]any) (float64, error)

var mathFuncs = map[string]mathFunc{
	"add":            binary("a", "b", func(a, b float64) (float64, error) { return a + b, nil }),
	"subtract":       binary("a", "b", func(a, b float64) (float64, error) { return a - b, nil }),
	"multiply":       binary("a", "b", func(a, b float64) (float64, error) { return a * b, nil }),
	"divide":         binary("a", "b", divide),
	"power":          binary("base", "exponent", func(a, b float64) (float64, error) { return math.Pow(a, b), nil }),
	"percentage":     binary("part", "whole", percentage),
	"absolute_value": unary(math.Abs),
	"mean":           list("mean", func(xs []float64) float64 { return sum(xs) / float64(len(xs)) }),
	"standard_deviation": list("standard deviation", func(xs []float64) float64 {
		m := sum(xs) / float64(len(xs))
		v := 0.0
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		return math.Sqrt(v / float64(len(xs)))
	}),
	"min_value":              list("minimum", func(xs []float64) float64 { return fold(xs, math.Min) }),
	"max_value":              list("maximum", func(xs []float64) float64 { return fold(xs, math.Max) }),
	"sum_values":             list("sum", sum),
	"logarithm":              logarithm,
	"square_root":            squareRoot,
	"round_number":           roundNumber,
	"si_unit_conversion":     siConversion,
	"imperial_si_conversion": imperialConversion,
}

func num(args map[string]any, k string) (float64, error) {
	v, ok := args[k]
	if !ok {
		return 0, fmt.Errorf("missing argument %q", k)
	}
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case string:
		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%s must be a number", k)
}

func binary(a, b string, f func(a, b float64) (float64, error)) mathFunc {
	return func(args map[string]any) (float64, error) {
		x, err := num(args, a)
		if err != nil {
			return 0, err
		}
		y, err := num(args, b)
		if err != nil {
			return 0, err
		}
		return f(x, y)
	}
}

func unary(f func(float64) float64) mathFunc {
	return func(args map[string]any) (float64, error) {
		x, err := num(args, "number")
		if err != nil {
			return 0, err
		}
		return f(x), nil
	}
}

func list(what string, f func([]float64) float64) mathFunc {
	return func(args map[string]any) (float64, error) {
		raw, ok := args["numbers"].([]any)
		if !ok {
			return 0, errors.New("numbers must be a list of numbers")
		}
		if len(raw) == 0 {
			return 0, fmt.Errorf("Cannot calculate %s of an empty list", what)
		}
		xs := make([]float64, len(raw))
		for i, r := range raw {
			x, err := num(map[string]any{"n": r}, "n")
			if err != nil {
				return 0, errors.New("All elements in the list must be numbers")
			}
			xs[i] = x
		}
		return f(xs), nil
	}
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func fold(xs []float64, f func(a, b float64) float64) float64 {
	r := xs[0]
	for _, x := range xs[1:] {
		r = f(r, x)
	}
	return r
}

func divide(a, b float64) (float64, error) {
	if b == 0 {
		return 0, errors.New("Cannot divide by zero")
	}
	return a / b, nil
}

func percentage(part, whole float64) (float64, error) {
	if whole == 0 {
		return 0, errors.New("Whole value cannot be zero")
	}
	return part / whole * 100, nil
}

// significant rounds x to p significant digits (p ≥ 1).
func significant(x float64, p int) float64 {
	if x == 0 || p < 1 || p > 17 || math.IsInf(x, 0) || math.IsNaN(x) {
		return x
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', p, 64), 64)
	return f
}

func precision(args map[string]any) (int, error) {
	p, err := num(args, "precision")
	if err != nil {
		return 0, err
	}
	if p != math.Trunc(p) || p < 1 {
		return 0, errors.New("precision must be a positive integer")
	}
	return int(p), nil
}

func logarithm(args map[string]any) (float64, error) {
	v, err := num(args, "value")
	if err != nil {
		return 0, err
	}
	b, err := num(args, "base")
	if err != nil {
		return 0, err
	}
	p, err := precision(args)
	if err != nil {
		return 0, err
	}
	if v <= 0 || b <= 0 || b == 1 {
		return 0, errors.New("the logarithm needs a positive value and a positive base other than 1")
	}
	return significant(math.Log(v)/math.Log(b), p), nil
}

func squareRoot(args map[string]any) (float64, error) {
	x, err := num(args, "number")
	if err != nil {
		return 0, err
	}
	p, err := precision(args)
	if err != nil {
		return 0, err
	}
	if x < 0 {
		return 0, errors.New("Cannot calculate square root of a negative number")
	}
	return significant(math.Sqrt(x), p), nil
}

func roundNumber(args map[string]any) (float64, error) {
	x, err := num(args, "number")
	if err != nil {
		return 0, err
	}
	d := 0.0
	if _, ok := args["decimal_places"]; ok {
		if d, err = num(args, "decimal_places"); err != nil || d != math.Trunc(d) {
			return 0, errors.New("First input must be a number, second input must be an integer")
		}
	}
	s := math.Pow(10, d)
	return math.RoundToEven(x*s) / s, nil // Python rounds halves to even
}

func units(args map[string]any) (float64, string, string, error) {
	v, err := num(args, "value")
	if err != nil {
		return 0, "", "", errors.New("Value must be a number")
	}
	in, _ := args["unit_in"].(string)
	out, _ := args["unit_out"].(string)
	return v, in, out, nil
}

var toMeters = map[string]float64{"km": 1000, "m": 1, "cm": 0.01, "mm": 0.001, "um": 1e-6, "nm": 1e-9}

func siConversion(args map[string]any) (float64, error) {
	v, in, out, err := units(args)
	if err != nil {
		return 0, err
	}
	fi, ok1 := toMeters[in]
	fo, ok2 := toMeters[out]
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("Conversion from '%s' to '%s' is not supported", in, out)
	}
	return v * fi * (1 / fo), nil
}

// imperialFactors are the conversion factors BFCL's class uses.
var imperialFactors = map[string]float64{
	"cm_to_in": 0.393701, "in_to_cm": 2.54, "m_to_ft": 3.28084, "ft_to_m": 0.3048,
	"m_to_yd": 1.09361, "yd_to_m": 0.9144, "km_to_miles": 0.621371, "miles_to_km": 1.60934,
	"kg_to_lb": 2.20462, "lb_to_kg": 0.453592, "celsius_to_fahrenheit": 1.8, "fahrenheit_to_celsius": 5.0 / 9,
}

func imperialConversion(args map[string]any) (float64, error) {
	v, in, out, err := units(args)
	if err != nil {
		return 0, err
	}
	if in == out {
		return v, nil
	}
	f, ok := imperialFactors[in+"_to_"+out]
	if !ok {
		return 0, fmt.Errorf("Conversion from '%s' to '%s' is not supported", in, out)
	}
	switch {
	case in == "celsius" && out == "fahrenheit":
		return v*f + 32, nil
	case in == "fahrenheit" && out == "celsius":
		return (v - 32) * f, nil
	}
	return v * f, nil
}
