package app

import "strconv"

// count is n things in words: "1 GPU", "2 GPUs", "0 GPUs" (what is the
// singular; its plural adds an s).
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
