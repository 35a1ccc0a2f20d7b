package data

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"

	"github.com/parquet-go/parquet-go"
)

// parquetMagic opens and ends every parquet file.
var parquetMagic = []byte("PAR1")

// maxParquetRows bounds the rows read from one parquet file, checked
// against the file's footer before any row is allocated.
const maxParquetRows = 50_000_000

// isParquet reports whether the file at path starts with parquet's magic.
func isParquet(f *os.File) bool {
	head := make([]byte, len(parquetMagic))
	n, _ := f.ReadAt(head, 0)
	return n == len(head) && bytes.Equal(head, parquetMagic)
}

// readParquet reads every row of a parquet file (the layout of Hugging
// Face datasets) as one item: the row as a JSON object, columns as keys,
// nested lists and structs as arrays and objects. Item.Line is the 1-based
// row number.
func readParquet(path string, f *os.File) ([]item, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("not a readable parquet file: %v", err)}
	}
	nrows := pf.NumRows()
	if nrows > maxParquetRows {
		return nil, &Error{File: path, Msg: fmt.Sprintf("%d rows, more than the %d one file may hold: split it", nrows, maxParquetRows)}
	}
	r := parquet.NewGenericReader[any](pf)
	defer r.Close()
	out := make([]item, 0, nrows)
	buf := make([]any, 256)
	for row := 1; ; {
		n, err := r.Read(buf)
		for _, v := range buf[:n] {
			raw, merr := json.Marshal(plainJSON(v))
			if merr != nil {
				return nil, &Error{File: path, Line: row, Msg: fmt.Sprintf("row %d: %v", row, merr)}
			}
			out = append(out, item{Line: row, Raw: raw})
			row++
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, &Error{File: path, Line: row, Msg: fmt.Sprintf("parquet row %d: %v", row, err)}
		}
		if n == 0 {
			return out, nil
		}
	}
}

// plainJSON turns a parquet value into one encoding/json writes as the
// dataset means it: byte arrays are text, big numbers plain numbers.
func plainJSON(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case map[string]any:
		for k, e := range x {
			x[k] = plainJSON(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = plainJSON(e)
		}
		return x
	case *big.Float:
		f, _ := x.Float64()
		return f
	default:
		return v
	}
}
