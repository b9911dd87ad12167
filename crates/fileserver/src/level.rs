//! The info levels of a loadfile's QUERY_PATH_INFORMATION,
//! QUERY_FILE_INFORMATION, QUERY_FS_INFORMATION, SET_FILE_INFORMATION and
//! FIND_FIRST lines, mapped to the SMB2 information class each asks
//! ([MS-FSCC] 2.4 and 2.5), as the loadfile's SMB1 trans2 requests would
//! have asked them ([MS-CIFS] 2.2.2.3).
//!
//! A pass-through level (1000 + a class, as NT and Samba's SMB1 server
//! take it: dbench's `1004` is FileBasicInformation) is that class when
//! SMB2 has it for the request. An SMB1 level is its SMB2 class: the
//! same information under its NT name (`SMB_QUERY_FILE_STANDARD_INFO`,
//! 0x102, is FileStandardInformation). A legacy level (`SMB_INFO_…`,
//! below 0x100) has no class of its own: it is sent as the one class that
//! holds everything it returns (`SMB_INFO_ALLOCATION`, 1, is
//! FileFsSizeInformation: the same four numbers). A level no class holds
//! — a name check, EAs in a listing, a value a set would need that the
//! line does not give, a level SMB1 does not define — is refused when the
//! loadfile is read, naming the file, line and level: every backend
//! replays the same lines.

use benchlab_smb2::msg;

/// Which request a level belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// QUERY_PATH_INFORMATION and QUERY_FILE_INFORMATION.
    QueryFile,
    QueryFs,
    SetFile,
    FindFirst,
}

/// SMB1 and legacy levels of each request and their classes.
const QUERY_FILE: [(u32, u8); 14] = [
    (1, msg::FILE_NETWORK_OPEN_INFORMATION),       // SMB_INFO_STANDARD
    (2, msg::FILE_ALL_INFORMATION),                // SMB_INFO_QUERY_EA_SIZE
    (3, msg::FILE_FULL_EA_INFORMATION),            // SMB_INFO_QUERY_EAS_FROM_LIST
    (4, msg::FILE_FULL_EA_INFORMATION),            // SMB_INFO_QUERY_ALL_EAS
    (0x101, msg::FILE_BASIC_INFORMATION),          // SMB_QUERY_FILE_BASIC_INFO
    (0x102, msg::FILE_STANDARD_INFORMATION),       // SMB_QUERY_FILE_STANDARD_INFO
    (0x103, msg::FILE_EA_INFORMATION),             // SMB_QUERY_FILE_EA_INFO
    (0x104, msg::FILE_NAME_INFORMATION),           // SMB_QUERY_FILE_NAME_INFO
    (0x105, msg::FILE_STANDARD_INFORMATION),       // SMB_QUERY_FILE_ALLOCATION_INFO
    (0x106, msg::FILE_STANDARD_INFORMATION),       // SMB_QUERY_FILE_END_OF_FILEINFO
    (0x107, msg::FILE_ALL_INFORMATION),            // SMB_QUERY_FILE_ALL_INFO
    (0x108, msg::FILE_ALTERNATE_NAME_INFORMATION), // SMB_QUERY_FILE_ALT_NAME_INFO
    (0x109, msg::FILE_STREAM_INFORMATION),         // SMB_QUERY_FILE_STREAM_INFO
    (0x10B, msg::FILE_COMPRESSION_INFORMATION),    // SMB_QUERY_FILE_COMPRESSION_INFO
];

/// File information classes QUERY_INFO asks of a file over SMB2.
const QUERY_FILE_CLASSES: [u8; 18] = [
    msg::FILE_BASIC_INFORMATION,
    msg::FILE_STANDARD_INFORMATION,
    msg::FILE_INTERNAL_INFORMATION,
    msg::FILE_EA_INFORMATION,
    msg::FILE_ACCESS_INFORMATION,
    msg::FILE_NAME_INFORMATION,
    msg::FILE_POSITION_INFORMATION,
    msg::FILE_FULL_EA_INFORMATION,
    msg::FILE_MODE_INFORMATION,
    msg::FILE_ALIGNMENT_INFORMATION,
    msg::FILE_ALL_INFORMATION,
    msg::FILE_ALTERNATE_NAME_INFORMATION,
    msg::FILE_STREAM_INFORMATION,
    msg::FILE_COMPRESSION_INFORMATION,
    msg::FILE_NETWORK_OPEN_INFORMATION,
    msg::FILE_ATTRIBUTE_TAG_INFORMATION,
    msg::FILE_NORMALIZED_NAME_INFORMATION,
    msg::FILE_ID_INFORMATION,
];

const QUERY_FS: [(u32, u8); 7] = [
    (1, msg::FILE_FS_SIZE_INFORMATION),          // SMB_INFO_ALLOCATION
    (2, msg::FILE_FS_VOLUME_INFORMATION),        // SMB_INFO_VOLUME
    (0x101, msg::FILE_FS_VOLUME_INFORMATION),    // SMB_QUERY_FS_LABEL_INFO
    (0x102, msg::FILE_FS_VOLUME_INFORMATION),    // SMB_QUERY_FS_VOLUME_INFO
    (0x103, msg::FILE_FS_SIZE_INFORMATION),      // SMB_QUERY_FS_SIZE_INFO
    (0x104, msg::FILE_FS_DEVICE_INFORMATION),    // SMB_QUERY_FS_DEVICE_INFO
    (0x105, msg::FILE_FS_ATTRIBUTE_INFORMATION), // SMB_QUERY_FS_ATTRIBUTE_INFO
];

/// File system information classes QUERY_INFO asks over SMB2.
const QUERY_FS_CLASSES: [u8; 8] = [
    msg::FILE_FS_VOLUME_INFORMATION,
    msg::FILE_FS_SIZE_INFORMATION,
    msg::FILE_FS_DEVICE_INFORMATION,
    msg::FILE_FS_ATTRIBUTE_INFORMATION,
    msg::FILE_FS_CONTROL_INFORMATION,
    msg::FILE_FS_FULL_SIZE_INFORMATION,
    msg::FILE_FS_OBJECT_ID_INFORMATION,
    msg::FILE_FS_SECTOR_SIZE_INFORMATION,
];

const SET_FILE: [(u32, u8); 2] = [
    (1, msg::FILE_BASIC_INFORMATION),     // SMB_INFO_STANDARD (set the times)
    (0x101, msg::FILE_BASIC_INFORMATION), // SMB_SET_FILE_BASIC_INFO
];

/// The one class a set is sent with: its value (the times, set to now)
/// is the only one a line can stand for; an end of file, an allocation,
/// a disposition or a position would be a number the line does not give.
const SET_FILE_CLASSES: [u8; 1] = [msg::FILE_BASIC_INFORMATION];

const FIND: [(u32, u8); 8] = [
    (1, msg::FILE_DIRECTORY_INFORMATION),             // SMB_INFO_STANDARD
    (2, msg::FILE_FULL_DIRECTORY_INFORMATION),        // SMB_INFO_QUERY_EA_SIZE
    (0x101, msg::FILE_DIRECTORY_INFORMATION),         // SMB_FIND_FILE_DIRECTORY_INFO
    (0x102, msg::FILE_FULL_DIRECTORY_INFORMATION),    // SMB_FIND_FILE_FULL_DIRECTORY_INFO
    (0x103, msg::FILE_NAMES_INFORMATION),             // SMB_FIND_FILE_NAMES_INFO
    (0x104, msg::FILE_BOTH_DIRECTORY_INFORMATION),    // SMB_FIND_FILE_BOTH_DIRECTORY_INFO
    (0x105, msg::FILE_ID_FULL_DIRECTORY_INFORMATION), // SMB_FIND_ID_FULL_DIRECTORY_INFO
    (0x106, msg::FILE_ID_BOTH_DIRECTORY_INFORMATION), // SMB_FIND_ID_BOTH_DIRECTORY_INFO
];

/// Directory information classes a listing asks (those benchlab's
/// listing decoder reads).
const FIND_CLASSES: [u8; 6] = [
    msg::FILE_DIRECTORY_INFORMATION,
    msg::FILE_FULL_DIRECTORY_INFORMATION,
    msg::FILE_BOTH_DIRECTORY_INFORMATION,
    msg::FILE_NAMES_INFORMATION,
    msg::FILE_ID_BOTH_DIRECTORY_INFORMATION,
    msg::FILE_ID_FULL_DIRECTORY_INFORMATION,
];

impl Request {
    fn levels(self) -> &'static [(u32, u8)] {
        match self {
            Request::QueryFile => &QUERY_FILE,
            Request::QueryFs => &QUERY_FS,
            Request::SetFile => &SET_FILE,
            Request::FindFirst => &FIND,
        }
    }

    fn classes(self) -> &'static [u8] {
        match self {
            Request::QueryFile => &QUERY_FILE_CLASSES,
            Request::QueryFs => &QUERY_FS_CLASSES,
            Request::SetFile => &SET_FILE_CLASSES,
            Request::FindFirst => &FIND_CLASSES,
        }
    }

    /// The SMB2 information class `level` asks, or why it has none (to
    /// follow "level N:" in a loadfile error).
    pub fn class(self, level: u32) -> Result<u8, String> {
        if let Some(&(_, c)) = self.levels().iter().find(|(l, _)| *l == level) {
            return Ok(c);
        }
        let pass = level
            .checked_sub(1000)
            .and_then(|c| u8::try_from(c).ok())
            .filter(|c| self.classes().contains(c));
        pass.ok_or_else(|| self.refusal(level))
    }

    fn refusal(self, level: u32) -> String {
        let why = match (self, level) {
            (Request::QueryFile, 6) => "SMB_INFO_IS_NAME_VALID checks a name; SMB2 has no such query",
            (Request::FindFirst, 3) => "SMB_INFO_QUERY_EAS_FROM_LIST returns EAs with each entry; no SMB2 listing does",
            (Request::SetFile, 1013 | 1014 | 1016 | 1019 | 1020 | 0x102..=0x104) => {
                "benchlab sets only the times (FileBasicInformation): this level sets a value \
                 (a disposition, position, mode, allocation or end of file) the line does not give"
            }
            _ => "SMB2 has no information class for it",
        };
        let known: Vec<String> = self
            .levels()
            .iter()
            .map(|(l, _)| {
                if *l >= 0x100 && *l < 1000 {
                    format!("{l:#x}")
                } else {
                    l.to_string()
                }
            })
            .collect();
        let pass: Vec<String> = self
            .classes()
            .iter()
            .map(|c| (1000 + u32::from(*c)).to_string())
            .collect();
        format!(
            "{why}: expected one of {} or a pass-through level {}",
            known.join(", "),
            pass.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The levels dbench's client.txt uses, and what each is sent as.
    #[test]
    fn client_txt_levels_map_to_their_classes() {
        let cases = [
            (Request::QueryFile, 1004, msg::FILE_BASIC_INFORMATION),
            (Request::QueryFile, 1035, msg::FILE_ATTRIBUTE_TAG_INFORMATION),
            (Request::QueryFile, 1005, msg::FILE_STANDARD_INFORMATION),
            (Request::QueryFile, 258, msg::FILE_STANDARD_INFORMATION),
            (Request::QueryFs, 259, msg::FILE_FS_SIZE_INFORMATION),
            (Request::QueryFs, 1, msg::FILE_FS_SIZE_INFORMATION),
            (Request::SetFile, 1004, msg::FILE_BASIC_INFORMATION),
            (Request::FindFirst, 260, msg::FILE_BOTH_DIRECTORY_INFORMATION),
        ];
        for (r, level, class) in cases {
            assert_eq!(r.class(level), Ok(class), "{r:?} {level}");
        }
    }

    #[test]
    fn smb1_and_pass_through_levels_map_as_nt_names_them() {
        let q = Request::QueryFile;
        assert_eq!(q.class(0x101), Ok(4));
        assert_eq!(q.class(0x107), Ok(18));
        assert_eq!(q.class(0x108), Ok(21));
        assert_eq!(q.class(0x109), Ok(22));
        assert_eq!(q.class(0x10B), Ok(28));
        assert_eq!(q.class(1), Ok(34));
        assert_eq!(q.class(1018), Ok(18));
        assert_eq!(q.class(1034), Ok(34));
        assert_eq!(Request::QueryFs.class(0x102), Ok(1));
        assert_eq!(Request::QueryFs.class(0x105), Ok(5));
        assert_eq!(Request::QueryFs.class(1007), Ok(7));
        assert_eq!(Request::FindFirst.class(0x103), Ok(12));
        assert_eq!(Request::FindFirst.class(0x106), Ok(37));
        assert_eq!(Request::FindFirst.class(1003), Ok(3));
        assert_eq!(Request::SetFile.class(0x101), Ok(4));
        assert_eq!(Request::SetFile.class(1), Ok(4));
    }

    /// A level no SMB2 class holds is refused, saying why and what is
    /// expected; a pass-through class of another request is not taken.
    #[test]
    fn levels_without_a_class_are_refused_with_what_is_expected() {
        let e = Request::QueryFile.class(6).unwrap_err();
        assert!(
            e.contains("SMB_INFO_IS_NAME_VALID") && e.contains("expected one of 1, 2, 3, 4, 0x101"),
            "{e}"
        );
        let e = Request::QueryFile.class(1010).unwrap_err();
        assert!(
            e.contains("SMB2 has no information class for it") && e.contains("1004, 1005"),
            "{e}"
        );
        assert!(Request::QueryFs.class(1002).is_err());
        assert!(Request::QueryFs.class(999).is_err());
        assert!(Request::FindFirst.class(3).unwrap_err().contains("EAs"));
        assert!(Request::FindFirst.class(0x202).is_err());
        let e = Request::SetFile.class(1020).unwrap_err();
        assert!(e.contains("the line does not give") && e.contains("1004"), "{e}");
        assert!(Request::SetFile.class(1005).is_err());
        assert!(Request::QueryFile.class(u32::MAX).is_err());
    }
}
