//go:build !purego

package sgemm

const purego = false
