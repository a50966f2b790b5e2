package controlplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPoll(t *testing.T) {
	permanent := errors.New("process exited")
	tests := []struct {
		name string
		// cond is called with the attempt number, from 0.
		cond     func(ctx context.Context, attempt int) error
		wantErr  []string
		wantNoIn []string
	}{
		{
			name: "done",
			cond: func(_ context.Context, attempt int) error {
				if attempt < 2 {
					return notYet("attempt %d", attempt)
				}
				return nil
			},
		},
		{
			name:    "permanent error ends the wait",
			cond:    func(context.Context, int) error { return permanent },
			wantErr: []string{"process exited"},
		},
		{
			name:    "timeout carries the last reason",
			cond:    func(_ context.Context, attempt int) error { return notYet("Available=False attempt %d", attempt) },
			wantErr: []string{"timed out after", "waiting for thing", "Available=False attempt"},
		},
		{
			// The attempt in flight when the deadline passes fails with the
			// deadline; the reason before it is the one worth reading.
			name: "an attempt cut by the deadline keeps the reason before it",
			cond: func(ctx context.Context, attempt int) error {
				if attempt == 0 {
					return notYet("Available=False FailedDiscoveryCheck: 503")
				}
				<-ctx.Done()
				return notYet("get APIService: %w", ctx.Err())
			},
			wantErr:  []string{"timed out after", "Available=False FailedDiscoveryCheck: 503"},
			wantNoIn: []string{"get APIService"},
		},
		{
			name: "an only attempt cut by the deadline is still reported",
			cond: func(ctx context.Context, _ int) error {
				<-ctx.Done()
				return notYet("get APIService: %w", ctx.Err())
			},
			wantErr: []string{"timed out after", "get APIService: context deadline exceeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempt := 0
			err := poll(context.Background(), 200*time.Millisecond, time.Millisecond, "thing", func(ctx context.Context) error {
				defer func() { attempt++ }()
				return tt.cond(ctx, attempt)
			})
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			for _, not := range tt.wantNoIn {
				assert.NotContains(t, err.Error(), not)
			}
		})
	}
}
