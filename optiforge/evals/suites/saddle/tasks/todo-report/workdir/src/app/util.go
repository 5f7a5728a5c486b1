package app

func Clamp(x, lo, hi int) int {
	// TODO(carol): validate lo <= hi
	return max(lo, min(hi, x))
}

// TODO(Eve): capitalised owner is not one
func Noop() {} // TODO(alice): remove
