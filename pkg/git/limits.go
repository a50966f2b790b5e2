package git

import (
	"io"
	"strconv"

	"github.com/kumodo/convoy-apiserver/pkg/bounded"
)

// Limits bound what one Git server's answer holds: its bytes (an SSH
// session's, from the advertisement to the end of the pack; each HTTP
// response's; the objects a fetch stores and the files of a commit) and the
// refs it advertises, each counted as it arrives, so that a server that
// never stops talking is stopped at the first byte or ref past its limit,
// not at the fetch timeout. 0 is no limit. The messages name them as
// convoy-apiserver's flags.
type Limits struct {
	Bytes int64 // --max-git-bytes
	Refs  int   // --max-git-refs
}

// bytesLimited reads r, failing a read past limit bytes with KindTooLarge
// naming --max-git-bytes; limit 0 is no limit.
func bytesLimited(r io.Reader, what string, limit int64) io.Reader {
	if limit <= 0 {
		return r
	}
	return bounded.NewReader(r, limit, func() error {
		return errorf(KindTooLarge, nil, "%s is larger than the limit of %d bytes (--max-git-bytes)", what, limit)
	})
}

// refCounter passes a Git reference advertisement through, counting its
// pkt-lines as they arrive (a flush, delimiter or response-end is none),
// and fails (KindTooManyRefs) the read that holds a line past max: one line per ref and
// peeled tag, plus the "# service=" line of smart HTTP: none of that read
// is given (io.ReadFull drops the error of a read that fills its buffer),
// and every read after fails too. A length that is not a pkt-line's is
// left to the decoder, which refuses it.
type refCounter struct {
	r     io.Reader
	what  string
	max   int
	limit int // --max-git-refs, for the message

	lines  int
	header [4]byte
	filled int // bytes of header read
	left   int // bytes of the current line's payload not read yet
	broken bool
	err    error
}

// refsCounted returns r counted by a refCounter that allows refs refs
// and extra lines more; refs 0 is no limit.
func refsCounted(r io.Reader, what string, refs, extra int) io.Reader {
	if refs <= 0 {
		return r
	}
	return &refCounter{r: r, what: what, max: refs + extra, limit: refs}
}

func (c *refCounter) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	for i := 0; i < n && !c.broken; {
		if c.left > 0 {
			skip := min(c.left, n-i)
			i += skip
			c.left -= skip
			continue
		}
		c.header[c.filled] = p[i]
		c.filled++
		i++
		if c.filled < len(c.header) {
			continue
		}
		c.filled = 0
		length, perr := strconv.ParseUint(string(c.header[:]), 16, 16)
		switch {
		case perr != nil:
			c.broken = true
		case length <= 2: // flush, delimiter, response end
		case length < 4:
			c.broken = true
		default:
			c.left = int(length) - 4
			if c.lines++; c.lines > c.max {
				c.err = errorf(KindTooManyRefs, nil, "%s advertises more than %d refs, the limit (--max-git-refs): stopped at the first past it", c.what, c.limit)
				return 0, c.err
			}
		}
	}
	return n, err
}
