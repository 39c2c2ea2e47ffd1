package rank

import (
	"errors"
	"fmt"

	"github.com/herod-archive/herod/internal/canon"
)

// OpGet asks a member for the rank it stored of one URL (frame 2: the
// URL) at or before Header.Day: the owner of a URL answers for it.
const OpGet = "get"

// AnswerGet answers an OpGet request from s.
func AnswerGet(s *Store, h Header, body []byte) (Reply, []byte) {
	if len(body) > canon.MaxLen {
		return Reply{Error: "rank get: url too long"}, nil
	}
	v, info, err := s.Rank(string(body), h.Day)
	switch {
	case errors.Is(err, ErrNoRank):
		return Reply{Error: ErrNoRank.Error(), Info: infoOrNil(info)}, nil
	case err != nil:
		return Reply{Error: err.Error()}, nil
	}
	return Reply{Rank: v, Info: &info}, nil
}

func infoOrNil(i RunInfo) *RunInfo {
	if i.Run == "" {
		return nil
	}
	return &i
}

// DecodeGet returns the rank an OpGet reply carries; ErrNoRank when the
// member has none.
func DecodeGet(rep Reply, _ []byte) (float64, RunInfo, error) {
	var info RunInfo
	if rep.Info != nil {
		info = *rep.Info
	}
	switch {
	case rep.Error == ErrNoRank.Error():
		return 0, info, ErrNoRank
	case rep.Error != "":
		return 0, info, fmt.Errorf("%w: %s", errRemote, rep.Error)
	}
	return rep.Rank, info, nil
}
